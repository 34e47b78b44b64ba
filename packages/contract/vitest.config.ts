import { defineConfig } from "vitest/config";
import { checked, typeTests, unitAndE2e } from "../../vitest.shared.js";

// Pure functions only: no sockets, processes or services. The tests that run the TypeScript
// compiler are the `e2e` project's (test/*.slow.test.ts and the type tests, vitest.shared.ts).
export default defineConfig({
  test: {
    ...checked({ lines: 97, functions: 98, branches: 92, statements: 96 }),
    projects: unitAndE2e({}, typeTests("./tsconfig.lint.json")),
  },
});

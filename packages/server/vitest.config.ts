import { defineConfig } from "vitest/config";
import { checked, typeTests, unitAndE2e } from "../../vitest.shared.js";

// Unit and end-to-end projects (vitest.shared.ts); the model-based and SQLite property tests are
// `*.slow.test.ts`, and the type tests (the TypeScript compiler) run with the e2e project. Coverage
// a point below measured (timing).
export default defineConfig({
  test: {
    ...checked({ lines: 95, functions: 94, branches: 85, statements: 93 }),
    projects: unitAndE2e({}, typeTests()),
  },
});

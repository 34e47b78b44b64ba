import { defineConfig } from "vitest/config";
import { checked, unitAndE2e } from "../../vitest.shared.js";

// Pure functions only: no sockets, processes or services. The text-limit tests over 8 MiB
// messages are the `e2e` project's (test/*.slow.test.ts, vitest.shared.ts).
export default defineConfig({
  test: {
    ...checked({ lines: 98, functions: 98, branches: 96, statements: 97 }),
    projects: unitAndE2e(),
  },
});

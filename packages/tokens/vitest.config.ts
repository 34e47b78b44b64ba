import { defineConfig } from "vitest/config";
import { checked, unitAndE2e } from "../../vitest.shared.js";

// Pure functions only: no sockets, processes or services. The README test, which runs the README's
// example with node against the built package, is the `e2e` project's (vitest.shared.ts).
export default defineConfig({
  test: {
    ...checked({ lines: 99, functions: 99, branches: 95, statements: 97 }),
    projects: unitAndE2e(),
  },
});

import { defineConfig } from "vitest/config";
import { checked, unitAndE2e } from "../../vitest.shared.js";

// Pure functions only: no sockets, processes or services. The README test, which runs the README's
// example with node against the built package, is the `e2e` project's (vitest.shared.ts).
export default defineConfig({
  test: {
    ...checked({ lines: 98, functions: 99, branches: 92, statements: 95 }),
    projects: unitAndE2e(),
  },
});

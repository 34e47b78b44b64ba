import { defineConfig } from "vitest/config";
import { checked } from "../../vitest.shared.js";

// Every test here runs servers, adapters or the kit's command: end-to-end. Coverage a point
// below measured (timing, vitest.shared.ts).
export default defineConfig({
  test: {
    ...checked({ lines: 88, functions: 89, branches: 70, statements: 86 }),
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
  },
});

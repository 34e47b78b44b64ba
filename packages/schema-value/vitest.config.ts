import { defineConfig } from "vitest/config";
import { checked } from "../../vitest.shared.js";

// Every test here is a unit test: pure functions, no sockets, processes or services.
export default defineConfig({
  test: {
    ...checked({ lines: 98, functions: 99, branches: 92, statements: 95 }),
    include: ["test/**/*.test.ts"],
  },
});

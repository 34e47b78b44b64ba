import { defineConfig } from "vitest/config";
import { checked } from "../../vitest.shared.js";

// Every test here is a unit test: pure functions, no sockets, processes or services.
export default defineConfig({
  test: {
    ...checked({ lines: 94, functions: 95, branches: 88, statements: 92 }),
    include: ["test/**/*.test.ts"],
    // A loaded two-core machine runs the property and limit tests at a third of their usual speed.
    testTimeout: 15_000,
    // test/*.test-d.ts are type tests: compiled with tsc, each expectTypeOf and @ts-expect-error checked.
    typecheck: { enabled: true, include: ["test/**/*.test-d.ts"], tsconfig: "./tsconfig.lint.json" },
  },
});

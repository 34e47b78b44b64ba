import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // A test that checks nothing fails: a helper whose assertions sit only on one branch, or a
    // property whose body never reaches its expect, must not pass silently.
    expect: { requireAssertions: true },
    // Coverage of src/, recorded by `pnpm test` in both phases and judged on what they cover
    // together (scripts/run-tests.sh); `npx vitest run --coverage` measures it alone.
    coverage: {
      provider: "v8",
      include: ["src/**/*.ts"],
      reporter: ["text-summary", "json-summary", "html"],
      // The lowest coverage measured when these were set, rounded down (random property inputs and
      // timing move it by a few tenths between runs). They only go up: raise them when the tests
      // cover more; never lower them to let a change through. One point below that here: the
      // end-to-end tests reach some paths (retries, backpressure, reconnects) only at some timings.
      thresholds: { lines: 88, functions: 89, branches: 70, statements: 86 },
    },
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
  },
});

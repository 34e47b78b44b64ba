import { defineConfig } from "vitest/config";

// Every test here is a unit test: pure functions, no sockets, processes or services.
export default defineConfig({
  test: {
    // A test that checks nothing fails: a helper whose assertions sit only on one branch, or a
    // property whose body never reaches its expect, must not pass silently.
    expect: { requireAssertions: true },
    include: ["test/**/*.test.ts"],
    // A loaded two-core machine runs the property and limit tests at a third of their usual speed.
    testTimeout: 15_000,
  },
});

import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // A test that checks nothing fails: a helper whose assertions sit only on one branch, or a
    // property whose body never reaches its expect, must not pass silently.
    expect: { requireAssertions: true },
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});

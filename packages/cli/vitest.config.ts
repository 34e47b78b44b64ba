import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    // Builds dist/ first: the end-to-end tests run the real `golem-stream` executable.
    globalSetup: ["test/support/global-setup.ts"],
  },
});

import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    // TODO(remove with the first test): the package has no tests yet.
    passWithNoTests: true,
  },
});

import { defineConfig } from "vitest/config";

/**
 * Two projects, as in every package of the workspace: `unit` (the text
 * processing, in memory) and `e2e` (`*.e2e.test.ts`: the real `serve
 * --agents` process, the client script and the CLI).
 */
export default defineConfig({
  test: {
    // A test that checks nothing fails.
    expect: { requireAssertions: true },
    projects: [
      {
        extends: true,
        test: { name: "unit", include: ["test/**/*.test.ts"], exclude: ["test/**/*.e2e.test.ts"], testTimeout: 15_000 },
      },
      {
        extends: true,
        test: { name: "e2e", include: ["test/**/*.e2e.test.ts"], testTimeout: 60_000 },
      },
    ],
  },
});

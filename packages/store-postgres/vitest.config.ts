import { defineConfig } from "vitest/config";
import { checked, unitAndE2e } from "../../vitest.shared.js";

/**
 * Unit and end-to-end projects (vitest.shared.ts): `unit` runs the writer and the change feed
 * against a scripted stand-in for their connection, no PostgreSQL; `e2e` a real PostgreSQL,
 * started once by the global setup, and the cluster's node processes. Coverage a point below
 * measured (timing).
 */
export default defineConfig({
  test: {
    ...checked({ lines: 88, functions: 85, branches: 84, statements: 85 }),
    projects: unitAndE2e(
      {},
      {
        globalSetup: ["test/support/global-setup.ts"],
        testTimeout: 30_000,
        hookTimeout: 60_000,
      },
    ),
  },
});

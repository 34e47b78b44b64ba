import { defineConfig } from "vitest/config";
import { checked, unitAndE2e } from "../../vitest.shared.js";

/**
 * Unit and end-to-end projects (vitest.shared.ts): `unit` runs the page's modules in happy-dom
 * (no server, no browser); `e2e` the console in Chromium against a real server, and the handler
 * on a real HTTP listener. The page's code in Chromium is not counted in coverage (V8 coverage of
 * the test process only): its numbers come from the unit tests, which run the page's start, runs
 * and store against fake-indexeddb and in-memory fakes of the client and Web Locks. A point below
 * measured (timing).
 */
export default defineConfig({
  test: {
    ...checked({ lines: 91, functions: 83, branches: 79, statements: 87 }),
    projects: unitAndE2e(
      {
        // The page's modules touch `document`, `sessionStorage` and `location`.
        environment: "happy-dom",
        environmentOptions: { happyDOM: { url: "http://console.test/" } },
      },
      { hookTimeout: 120_000 },
    ),
  },
});

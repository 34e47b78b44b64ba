import { defineConfig } from "vitest/config";
import { checked, typeTests, unitAndE2e } from "../../vitest.shared.js";

// Unit and end-to-end projects (vitest.shared.ts); the type tests (the TypeScript compiler) and the
// browser bundle's check (esbuild over the built package) run with the e2e project. Coverage a point
// below measured (timing).
export default defineConfig({
  test: {
    ...checked({ lines: 95, functions: 93, branches: 87, statements: 92 }),
    projects: unitAndE2e(
      {},
      {
        ...typeTests(),
        // Node 20 has the WHATWG WebSocket global only behind this flag (Node 22 by default):
        // transport.e2e.test.ts runs the shipped transport over it on both.
        execArgv: process.versions.node.startsWith("20.") ? ["--experimental-websocket"] : [],
      },
    ),
  },
});

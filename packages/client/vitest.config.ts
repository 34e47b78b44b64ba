import { defineConfig } from "vitest/config";
import { checked, unitAndE2e } from "../../vitest.shared.js";

// Unit and end-to-end projects (vitest.shared.ts); coverage a point below measured (timing).
export default defineConfig({
  test: {
    ...checked({ lines: 95, functions: 93, branches: 87, statements: 92 }),
    projects: unitAndE2e(
      {
        testTimeout: 15_000,
        // test/*.test-d.ts are type tests: compiled with tsc, each expectTypeOf and @ts-expect-error checked.
        typecheck: { enabled: true, include: ["test/**/*.test-d.ts"], tsconfig: "./tsconfig.types.json" },
      },
      {
        testTimeout: 60_000,
        // Node 20 has the WHATWG WebSocket global only behind this flag (Node 22 by default):
        // transport.e2e.test.ts runs the shipped transport over it on both.
        execArgv: process.versions.node.startsWith("20.") ? ["--experimental-websocket"] : [],
      },
    ),
  },
});

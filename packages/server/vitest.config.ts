import { defineConfig } from "vitest/config";
import { checked, unitAndE2e } from "../../vitest.shared.js";

// Unit and end-to-end projects (vitest.shared.ts); coverage a point below measured (timing).
export default defineConfig({
  test: {
    ...checked({ lines: 95, functions: 94, branches: 85, statements: 93 }),
    projects: unitAndE2e(
      {
        testTimeout: 15_000,
        // test/*.test-d.ts are type tests: compiled with tsc, each expectTypeOf and @ts-expect-error checked.
        typecheck: { enabled: true, include: ["test/**/*.test-d.ts"], tsconfig: "./tsconfig.types.json" },
      },
      { testTimeout: 60_000 },
    ),
  },
});

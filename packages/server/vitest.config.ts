import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    // test/*.test-d.ts are type tests: compiled with tsc, each expectTypeOf and @ts-expect-error checked.
    typecheck: { enabled: true, include: ["test/**/*.test-d.ts"], tsconfig: "./tsconfig.types.json" },
  },
});

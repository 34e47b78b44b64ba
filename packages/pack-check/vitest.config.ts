import { defineConfig } from "vitest/config";
import { checked } from "../../vitest.shared.js";

// Packs every package and installs the tarballs with npm: end-to-end, and slow the first time.
export default defineConfig({
  test: {
    ...checked(),
    include: ["test/**/*.test.ts"],
    testTimeout: 120_000,
    hookTimeout: 300_000,
  },
});

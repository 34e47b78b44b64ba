import { defineConfig } from "vitest/config";
import { checked } from "../../vitest.shared.js";

// Every test here drives real sockets on loopback: end-to-end.
export default defineConfig({
  test: {
    ...checked(),
    include: ["test/**/*.e2e.test.ts"],
  },
});

import { defineConfig } from "vitest/config";
import { checked } from "../../vitest.shared.js";

// Every test here drives real sockets on loopback: end-to-end. Coverage as measured, rounded down
// (vitest.shared.ts): the TCP proxy's tests cover it; the Chromium and demo-value helpers are
// exercised only by the packages that use them (console, client), whose runs count their own `src/`.
export default defineConfig({
  test: {
    ...checked({ lines: 85, functions: 84, branches: 77, statements: 82 }),
    include: ["test/**/*.e2e.test.ts"],
  },
});

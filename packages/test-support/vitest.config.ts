import { defineConfig } from "vitest/config";
import { checked } from "../../vitest.shared.js";

// The tests here drive real sockets on loopback (end-to-end), besides one that checks the server
// messages are the protocol's. Coverage as measured, rounded down
// (vitest.shared.ts): the TCP proxy's tests cover it; the Chromium and demo-value helpers are
// exercised only by the packages that use them (console, client), whose runs count their own `src/`.
export default defineConfig({
  test: {
    ...checked({ lines: 85, functions: 84, branches: 77, statements: 82 }),
    include: ["test/**/*.test.ts"],
  },
});

/**
 * @golem-stream/console for Node: the web console's static files (built by
 * Vite into dist/www) and a request handler that serves them, for
 * `createSessionServer({ pages })` / `startEmbeddedServer({ pages })` — how
 * `golem-stream serve` serves the console at `/`. No dependency: the page is
 * bundled at build time, so serving it needs no browser toolchain.
 */
export { consoleHandler, CONSOLE_ROOT, type ConsoleHandler, type ConsoleHandlerOptions } from "./handler.js";

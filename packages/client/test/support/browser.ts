/**
 * A real browser for the client's browser tests: Debian's Chromium driven by
 * playwright-core, and a tiny loopback HTTP server that serves a page with
 * the package bundled by esbuild for the browser (test/browser-page/page.js).
 *
 * When no browser can be started, `launchBrowser` throws with the reason and
 * the fix: the tests fail, they are never skipped.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { launchChromium } from "@golem-stream/test-support";

const PAGE_ENTRY = fileURLToPath(new URL("../browser-page/page.js", import.meta.url));

export { CHROMIUM_PATH } from "@golem-stream/test-support";

/** Debian's Chromium, headless (@golem-stream/test-support). */
export const launchBrowser = launchChromium;

/** The page's script: the package as a browser bundle gets it (`browser` export condition). */
export async function bundlePage(): Promise<string> {
  const result = await build({
    entryPoints: [PAGE_ENTRY],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
    logLevel: "silent",
  });
  return result.outputFiles[0]!.text;
}

export interface PageServer {
  /** `http://127.0.0.1:<port>`: also the page's Origin. */
  readonly origin: string;
  close(): Promise<void>;
}

/** Serves `/` (an empty page loading the script) and `/page.js` on loopback. */
export async function servePage(script: string): Promise<PageServer> {
  const html = '<!doctype html><meta charset="utf-8"><title>golem-stream client</title><script type="module" src="/page.js"></script>';
  const server: Server = createServer((request, response) => {
    const [type, body] =
      request.url === "/page.js" ? ["text/javascript", script] : request.url === "/" ? ["text/html", html] : [undefined, undefined];
    if (body === undefined) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { "content-type": `${type}; charset=utf-8`, "cache-control": "no-store" }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

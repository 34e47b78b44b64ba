/**
 * A real browser for the client's browser tests: Debian's Chromium driven by
 * playwright-core, and a tiny loopback HTTP server that serves a page with
 * the package bundled by esbuild for the browser (test/browser-page/page.js).
 *
 * When no browser can be started, `launchBrowser` throws with the reason and
 * the fix: the tests fail, they are never skipped.
 */
import { existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { chromium, type Browser } from "playwright-core";

const PAGE_ENTRY = fileURLToPath(new URL("../browser-page/page.js", import.meta.url));

/** Where Chromium is: `$CHROMIUM_PATH`, else Debian's `chromium` package. */
export const CHROMIUM_PATH = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium";

/**
 * Flags for a headless Chromium in a sandboxed CI container (running as
 * root, no GPU) on a closed network: without the background-networking
 * flags it keeps trying to reach Google's hosts.
 */
const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-dev-shm-usage",
];

export async function launchBrowser(): Promise<Browser> {
  const fix = "install Debian's chromium (apt-get install -y chromium; `pnpm test` does, through scripts/ensure-test-packages.sh) or set CHROMIUM_PATH";
  if (!existsSync(CHROMIUM_PATH)) throw new Error(`no browser can be started: ${CHROMIUM_PATH} does not exist; ${fix}`);
  try {
    return await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true, timeout: 60_000 });
  } catch (error) {
    throw new Error(`no browser can be started from ${CHROMIUM_PATH}: ${error instanceof Error ? error.message : String(error)}; ${fix}`);
  }
}

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

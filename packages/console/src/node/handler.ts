/**
 * Serves the console's files: `GET`/`HEAD` of `/` (and `/index.html`) and of
 * the built assets, read once into memory when the handler is made (the whole
 * console is a few hundred KiB). Everything else is left to the caller
 * (resolves false), so the session server answers its own 404.
 *
 * Headers keep the page to itself: a Content-Security-Policy allowing only
 * this origin's scripts, styles and connections (`connect-src 'self'` covers
 * the same-origin WebSocket), no framing, no referrer, no MIME sniffing.
 * The page is `no-store`; assets carry a content hash in their names and
 * are cached for a year.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { extname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

/** Where the built page is: dist/www beside dist/node. */
export const CONSOLE_ROOT = fileURLToPath(new URL("../www", import.meta.url));

export interface ConsoleHandlerOptions {
  /** Directory of the built page (default `CONSOLE_ROOT`). */
  readonly root?: string;
}

/** Answers a console request (resolves true) or leaves it alone (false). */
export type ConsoleHandler = (request: IncomingMessage, response: ServerResponse) => Promise<boolean>;

const TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
};

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data: blob:; " +
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
};

interface File {
  readonly body: Buffer;
  readonly type: string;
  readonly cache: string;
}

/** Every file under `root`, by URL path (`/index.html`, `/assets/index-1a2b.js`). */
function readTree(root: string): Map<string, File> {
  const files = new Map<string, File>();
  const walk = (directory: string): void => {
    for (const name of readdirSync(directory)) {
      const path = join(directory, name);
      if (statSync(path).isDirectory()) walk(path);
      else {
        const url = `/${relative(root, path).split(sep).join("/")}`;
        const type = TYPES[extname(name)] ?? "application/octet-stream";
        const cache = url.startsWith("/assets/") ? "public, max-age=31536000, immutable" : "no-store";
        files.set(url, { body: readFileSync(path), type, cache });
      }
    }
  };
  walk(root);
  return files;
}

/**
 * A handler for the built console. Throws at once, naming the fix, when the
 * page was not built (`dist/www/index.html` missing).
 */
export function consoleHandler(options: ConsoleHandlerOptions = {}): ConsoleHandler {
  const root = options.root ?? CONSOLE_ROOT;
  let files: Map<string, File>;
  try {
    files = readTree(root);
  } catch (cause) {
    throw new Error(
      `the web console is not built (${root} is unreadable): the package is incomplete; reinstall it (in a checkout of the repository, run pnpm build)`,
      { cause },
    );
  }
  if (!files.has("/index.html"))
    throw new Error(
      `the web console is not built (${join(root, "index.html")} is missing): the package is incomplete; reinstall it (in a checkout of the repository, run pnpm build)`,
    );
  return async (request, response) => {
    if (request.method !== "GET" && request.method !== "HEAD") return false;
    let path: string;
    try {
      path = new URL(request.url ?? "/", "http://localhost").pathname;
    } catch {
      return false;
    }
    // The map lookup is the whole path check: only files found at startup are served.
    const file = files.get(path === "/" ? "/index.html" : path);
    if (file === undefined) return false;
    response.writeHead(200, {
      ...SECURITY_HEADERS,
      "content-type": file.type,
      "content-length": String(file.body.length),
      "cache-control": file.cache,
    });
    response.end(request.method === "HEAD" ? undefined : file.body);
    return true;
  };
}

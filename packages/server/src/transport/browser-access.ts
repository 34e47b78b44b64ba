/**
 * The browser extension (docs/protocol/browser.md), opt-in with
 * `createSessionServer({ browsers: { allowedOrigins } })`: a browser cannot
 * set `Authorization` on a WebSocket, so it offers its bearer token as a
 * `golem-stream.bearer.<base64url>` Sec-WebSocket-Protocol entry beside the
 * protocol's own subprotocol. The server reads it, never selects (echoes)
 * it, and never logs it.
 *
 * Against cross-site WebSocket hijacking, a request carrying an `Origin`
 * (every browser request does) must come from an allowed origin, whatever
 * its credential; requests without `Origin` (non-browser clients) are
 * unaffected. Without the option, nothing here runs: the entry is ignored
 * and Origin is not checked (a browser then has no credential to send).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { decodeBearerSubprotocol, BEARER_SUBPROTOCOL_PREFIX, ProtocolError } from "@golem-stream/wire";
import type { Logger } from "../options.js";
import { offeredSubprotocols } from "./http-handshake.js";

export interface BrowserOptions {
  /**
   * Origins whose pages may open sessions and read the catalogue, each
   * `scheme://host[:port]` exactly as a browser sends it in `Origin`
   * (`https://app.example.com`, `http://127.0.0.1:5173`). No wildcard.
   */
  readonly allowedOrigins: readonly string[];
  /**
   * Also allow the origins of the server's own listening address, added by
   * `listen()` once the port is known (default false): `http://<host>:<port>`,
   * and for loopback or wildcard binds `http://localhost:<port>` and every
   * local interface address. For pages the server serves itself (the web
   * console). A name the server cannot know (a DNS name, a TLS proxy) still
   * needs `allowedOrigins`. No Host-header matching: a DNS-rebinding page
   * has a foreign origin and stays refused.
   */
  readonly allowListeningOrigins?: boolean;
}

/** Where a request's bearer token came from. */
export type Credential =
  { readonly from: "authorization" } | { readonly from: "subprotocol"; readonly token: string } | { readonly from: "none" };

export class BrowserAccess {
  readonly #origins: Set<string>;
  readonly #logger: Logger;

  constructor(options: BrowserOptions, logger: Logger) {
    this.#origins = new Set(checkOrigins(options));
    this.#logger = logger;
  }

  /** Origins added after construction (the listening address's, see `allowListeningOrigins`). */
  allow(origins: Iterable<string>): void {
    for (const origin of origins) this.#origins.add(origin);
  }

  /** Refuses (`forbidden`, HTTP 403, nothing upgraded) a request whose Origin is not allowed. */
  checkOrigin(request: IncomingMessage): void {
    const origin = request.headers.origin;
    if (origin === undefined || this.#origins.has(origin)) return;
    // The origin is public; no credential is logged.
    this.#logger.warn("refused a request from an origin that is not allowed", { event: "origin.refused", origin: origin.slice(0, 200) });
    throw new ProtocolError("forbidden", "this origin may not use the server");
  }

  /** Whether the request offers a bearer subprotocol entry (well formed or not). */
  offersBearerEntry(request: IncomingMessage): boolean {
    return [...(offeredSubprotocols(request) ?? [])].some((name) => name.startsWith(BEARER_SUBPROTOCOL_PREFIX));
  }

  /**
   * The credential a request offers. Exactly one may be given: a request
   * with both an Authorization header and a bearer entry, or with two
   * entries, is `unauthenticated`.
   */
  credential(request: IncomingMessage): Credential {
    const entries = [...(offeredSubprotocols(request) ?? [])].filter((name) => name.startsWith(BEARER_SUBPROTOCOL_PREFIX));
    const hasAuthorization = request.headers.authorization !== undefined;
    if (entries.length === 0) return hasAuthorization ? { from: "authorization" } : { from: "none" };
    if (entries.length > 1 || hasAuthorization)
      throw new ProtocolError("unauthenticated", "give one bearer token: an Authorization header or one bearer subprotocol entry");
    const token = decodeBearerSubprotocol(entries[0]!);
    if (token === undefined)
      throw new ProtocolError("unauthenticated", "the bearer subprotocol entry is not canonical base64url of a token");
    return { from: "subprotocol", token };
  }

  /**
   * CORS for the catalogue (`GET /v1/agents/types` with `Authorization`,
   * which a page may send with fetch): allowed origins only. Returns true
   * when the request was a preflight, answered here.
   */
  answerCors(request: IncomingMessage, response: ServerResponse): boolean {
    const origin = request.headers.origin;
    if (origin === undefined || !this.#origins.has(origin)) return false;
    response.setHeader("access-control-allow-origin", origin);
    response.setHeader("vary", "Origin");
    if (request.method !== "OPTIONS") return false;
    response.writeHead(204, {
      "access-control-allow-methods": "GET",
      "access-control-allow-headers": "authorization",
      "access-control-max-age": "600",
    });
    response.end();
    return true;
  }
}

/** `scheme://host[:port]`, serialized as a browser serializes an origin. */
function checkOrigins(options: BrowserOptions): string[] {
  if (typeof options !== "object" || options === null || !Array.isArray(options.allowedOrigins)) {
    throw new TypeError("options.browsers.allowedOrigins must be an array of origins");
  }
  if (options.allowListeningOrigins !== undefined && typeof options.allowListeningOrigins !== "boolean") {
    throw new TypeError("options.browsers.allowListeningOrigins must be a boolean");
  }
  if (options.allowedOrigins.length === 0 && options.allowListeningOrigins !== true) {
    throw new TypeError("options.browsers.allowedOrigins must name at least one origin");
  }
  return options.allowedOrigins.map((origin) => {
    let parsed: URL | undefined;
    try {
      parsed = typeof origin === "string" ? new URL(origin) : undefined;
    } catch {
      parsed = undefined;
    }
    if (parsed === undefined || (parsed.protocol !== "http:" && parsed.protocol !== "https:") || parsed.origin !== origin) {
      throw new TypeError(
        `options.browsers.allowedOrigins: ${JSON.stringify(origin)} is not an origin (scheme://host[:port], no path or trailing slash)`,
      );
    }
    return origin;
  });
}

/**
 * The origins a browser uses for pages served by a server listening on
 * `address:port`: the address itself, and for a loopback or wildcard bind
 * `localhost` and (wildcard) every local interface address; `https` ones
 * when it serves TLS (a page's origin has the scheme it was loaded with).
 */
export function listeningOrigins(address: string, port: number, interfaceAddresses: readonly string[], secure = false): string[] {
  const hostOf = (ip: string): string => (ip.includes(":") ? `[${ip}]` : ip);
  const wildcard = address === "0.0.0.0" || address === "::";
  const loopback = address === "127.0.0.1" || address === "::1" || address.startsWith("127.");
  const hosts = new Set<string>();
  if (!wildcard) hosts.add(hostOf(address));
  if (wildcard || loopback) hosts.add("localhost");
  if (wildcard) for (const ip of interfaceAddresses) if (!ip.startsWith("fe80:")) hosts.add(hostOf(ip));
  return [...hosts].map((host) => new URL(`${secure ? "https" : "http"}://${host}:${port}`).origin);
}

/**
 * Where the server is and how to authenticate: flags first, then the
 * environment, then the default. Resolved once per command so every request
 * of a run goes to the same place with the same credentials.
 */
import { usageError } from "./exit-codes.js";
import type { ConnectionOptions } from "./options.js";
import { DEFAULT_URL } from "./options.js";
import { checkBearerToken } from "./bearer-tokens.js";

export interface Connection {
  /** Base URL as given, for the session client (it derives the WebSocket endpoint). */
  readonly url: string;
  /** The same server's HTTP origin, for the discovery endpoint. */
  readonly httpOrigin: string;
  readonly token: string;
}

/** The server's base URL: `--url`, then GOLEM_STREAM_URL, then the default. */
export function serverUrl(options: ConnectionOptions, env: Readonly<Record<string, string | undefined>>): string {
  return options.url ?? nonEmpty(env["GOLEM_STREAM_URL"]) ?? DEFAULT_URL;
}

export function resolveConnection(options: ConnectionOptions, env: Readonly<Record<string, string | undefined>>): Connection {
  const url = serverUrl(options, env);
  const token = options.token ?? nonEmpty(env["GOLEM_STREAM_TOKEN"]);
  if (token === undefined) {
    throw usageError("no bearer token: pass --token or set GOLEM_STREAM_TOKEN (serve prints where to find it)");
  }
  return {
    url,
    httpOrigin: httpOriginOf(url),
    token: checkBearerToken(token, options.token === undefined ? "GOLEM_STREAM_TOKEN" : "--token"),
  };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}

export function httpOriginOf(base: string): string {
  let url: URL;
  try {
    url = new URL(base);
  } catch (cause) {
    throw usageError(`--url ${base}: not a URL`, cause);
  }
  const scheme = { "http:": "http:", "https:": "https:", "ws:": "http:", "wss:": "https:" }[url.protocol];
  if (scheme === undefined) throw usageError(`--url ${base}: use http://, https://, ws:// or wss://`);
  return `${scheme}//${url.host}`;
}

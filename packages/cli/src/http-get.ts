/**
 * One bounded `GET` through node:http / node:https. `invoke` has loaded those
 * already (the WebSocket client uses them), while the global `fetch` loads
 * and compiles undici on first use: 50–70 ms of every invocation's start on
 * this project's bench machine (docs/performance.md).
 *
 * Redirects are not followed: the request carries a bearer token, and the
 * discovery endpoint lives at the same origin as the sessions, so a redirect
 * means `--url` should name its target.
 */
import type { IncomingMessage, RequestOptions } from "node:http";

export interface HttpResponse {
  readonly status: number;
  /** The `location` header of a redirect, if any. */
  readonly location: string | undefined;
  readonly body: Uint8Array;
}

/**
 * A body past the caller's bound, refused before it was read whole (the response is destroyed, so
 * neither the connection nor the server sending it stays busy). The caller says which bound.
 */
export class ResponseTooLarge extends Error {
  override readonly name = "ResponseTooLarge";
  constructor(
    readonly maxBytes: number,
    /** The `content-length` the server declared, when that is what refused it. */
    readonly declared: number | undefined,
  ) {
    super(`response is larger than ${maxBytes} bytes`);
  }
}

/**
 * GETs `url`; the body is bounded by `maxBytes` before it is buffered (a larger one fails with
 * `ResponseTooLarge`). Connection errors reject with Node's own errors (their `code`: ECONNREFUSED,
 * ENOTFOUND, ERR_SSL_…); an aborted `signal` rejects with an AbortError.
 */
export async function httpGet(url: URL, headers: Record<string, string>, signal: AbortSignal, maxBytes: number): Promise<HttpResponse> {
  const { get } = url.protocol === "https:" ? await import("node:https") : await import("node:http");
  const options: RequestOptions = { headers, signal };
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    get(url, options, resolve).once("error", reject);
  });
  const declared = Number(response.headers["content-length"] ?? "0");
  if (declared > maxBytes) {
    response.destroy();
    throw new ResponseTooLarge(maxBytes, declared);
  }
  const parts: Buffer[] = [];
  let total = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > maxBytes) {
      response.destroy();
      throw new ResponseTooLarge(maxBytes, undefined);
    }
    parts.push(chunk);
  }
  return { status: response.statusCode ?? 0, location: response.headers.location, body: new Uint8Array(Buffer.concat(parts, total)) };
}

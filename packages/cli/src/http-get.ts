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
import { ProtocolError } from "@golem-stream/wire";

export interface HttpResponse {
  readonly status: number;
  /** The `location` header of a redirect, if any. */
  readonly location: string | undefined;
  readonly body: Uint8Array;
}

/**
 * GETs `url`; the body is bounded by `maxBytes` before it is buffered (a larger one fails with
 * `limit-exceeded`). Connection errors reject with Node's own errors (their `code`: ECONNREFUSED,
 * ENOTFOUND, ERR_SSL_…); an aborted `signal` rejects with an AbortError.
 */
export async function httpGet(url: URL, headers: Record<string, string>, signal: AbortSignal, maxBytes: number): Promise<HttpResponse> {
  const { get } = url.protocol === "https:" ? await import("node:https") : await import("node:http");
  const options: RequestOptions = { headers, signal };
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    get(url, options, resolve).once("error", reject);
  });
  const tooLarge = () => new ProtocolError("limit-exceeded", `discovery response is larger than ${maxBytes} bytes`);
  if (Number(response.headers["content-length"] ?? "0") > maxBytes) {
    response.destroy();
    throw tooLarge();
  }
  const parts: Buffer[] = [];
  let total = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > maxBytes) {
      response.destroy();
      throw tooLarge();
    }
    parts.push(chunk);
  }
  return { status: response.statusCode ?? 0, location: response.headers.location, body: new Uint8Array(Buffer.concat(parts, total)) };
}

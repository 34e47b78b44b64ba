/**
 * The answer a TLS listener gives a plain HTTP request (an `http://` or
 * `ws://` URL given for a port that speaks TLS): 400 in the error envelope
 * with `protocol-error`, which no other handshake refusal carries. The
 * server writes it, and the client and the CLI recognise it by its status and
 * code, so that each says in its own words to use `https://` (`wss://`)
 * instead of failing with the server's text, or retrying.
 *
 * Pure: it parses a URL and compares.
 */
import type { ErrorCode } from "./errors.js";

/**
 * `protocol-error`: the request is well-formed HTTP, so not `invalid-message`, but the connection
 * must begin with a TLS handshake (decisions-v1 §5: "valid in form but not in the session's state";
 * not retryable before acceptance).
 */
export const PLAIN_HTTP_ON_TLS_CODE: ErrorCode = "protocol-error";

/** Whether `status` and the envelope's `code`, answering a request to `url`, are a TLS port's refusal of plain HTTP. */
export function isPlainHttpOnTlsRefusal(url: string | URL, status: number, code: string | undefined): boolean {
  if (status !== 400 || code !== PLAIN_HTTP_ON_TLS_CODE) return false;
  let protocol: string;
  try {
    protocol = new URL(url).protocol;
  } catch {
    return false;
  }
  return protocol === "http:" || protocol === "ws:";
}

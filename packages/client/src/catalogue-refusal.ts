/**
 * What a catalogue request answered with an HTTP error status fails with: `rejected`, with the
 * public code of the error envelope (decisions §5) its body holds. A body that is no envelope (a
 * proxy's HTML page for a 502, an empty body) says nothing about the protocol, so it is no server
 * violation: as for a refused WebSocket handshake (`ws-transport.ts`), a 5xx is `internal-error`,
 * retryable (a gateway or a server failing for now), anything else `protocol-error`.
 */
import { ProtocolError } from "@golem-stream/wire";
import { errorEnvelope } from "./error-envelope.js";
import { ClientError } from "./errors.js";
import { plainHttpRefusal } from "./tls-refusal.js";

/**
 * `askedFor` names the catalogue asked for, added to a `not-found` (most often a misspelt application
 * or environment). A TLS port's refusal of the plain request to `url` is `plainHttpRefusal`'s error.
 */
export function catalogueRefusal(status: number, body: Uint8Array, askedFor: string, url: string): ClientError {
  const envelope = errorEnvelope(body, body.byteLength);
  if (envelope === undefined) {
    const transient = status >= 500;
    return new ClientError("rejected", `discovery failed with HTTP ${status} (no error envelope in the response)`, {
      code: transient ? "internal-error" : "protocol-error",
      retryable: transient,
    });
  }
  const { code, message } = envelope;
  const said = message ?? `discovery failed with HTTP ${status}`;
  const plain = plainHttpRefusal(new ProtocolError(code, said), status, url);
  if (plain !== undefined) return plain;
  // The server does not repeat what was asked for.
  return new ClientError("rejected", code === "not-found" ? `${said} ${askedFor}` : said, { code });
}

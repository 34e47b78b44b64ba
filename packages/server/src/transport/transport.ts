/**
 * The transport folder owns the HTTP and WebSocket edge: the upgrade and
 * everything decided before a socket exists (http-handshake.ts, host and
 * browser checks, the throttle on failed authentications), one connection's
 * message loop (connection.ts), liveness pings, the discovery endpoint, and
 * the transports the runtime sends through (this file, ws-transport.ts). It
 * hands first messages to `SessionRuntime` and stream messages to
 * attachments; it decides no protocol rule itself.
 *
 * The transport seen by the protocol runtime: send one complete message,
 * close with a status, stop and resume reading. `WsTransport`
 * (ws-transport.ts) is the real one; tests may supply an in-memory one.
 * Encoding happens here so the runtime works with typed messages only.
 */
import { type EncodeOptions, encodeServerMessage, type OutputStreamItemHead, type ServerMessage } from "@golem-stream/wire";
import { encodeOutputStreamItemWithCanonicalValue } from "@golem-stream/wire/internal";

/**
 * An `outputStreamItem` whose value is the canonical UTF-8 text the store
 * recorded for it: sent as those bytes, not parsed and encoded again: the
 * store wrote them from a value it had validated, and parsing and
 * re-encoding every small output item was a measurable share of the
 * server's CPU (docs/performance.md).
 */
export interface StoredValueItem extends OutputStreamItemHead {
  readonly canonicalValue: Uint8Array;
}

/** What the runtime hands a transport: a typed message, or an output item around its stored value. */
export type OutgoingMessage = ServerMessage | StoredValueItem;

/** The text (or binary envelope, in memory `options.allocate` gives when set) of one outgoing message. */
export function encodeOutgoing(message: OutgoingMessage, options?: EncodeOptions): string | Uint8Array {
  if (!("canonicalValue" in message)) return encodeServerMessage(message, options);
  // The head member by member: object rest (`{ canonicalValue, ...head }`)
  // took four times as long, once per output item. Every member is required,
  // so a member added to the head is a type error here, not a silent drop.
  const { type, channel, cursorToken, mappings, sequence } = message;
  const head: Required<OutputStreamItemHead> = { type, channel, cursorToken, mappings, sequence };
  return encodeOutputStreamItemWithCanonicalValue(head, message.canonicalValue);
}

/**
 * What `SessionTransport.send` returns when the caller may go on at once.
 * A sender of many small messages (an output pump) compares with it and
 * skips its await: an await per item, even of a settled promise, costs
 * microtask turns and garbage on the server's busiest path.
 */
export const SENT: Promise<void> = Promise.resolve();

/**
 * Sends a connection's last message (a revocation, a rejection), then runs
 * `close`, which closes the transport. The close does not wait for the send
 * to drain: a transport's close flushes what was sent before it, and a
 * client that stopped reading (or a half-open connection) would otherwise
 * keep its socket open for good, the send never settling. Runs after the
 * current step, so the caller finishes what it is doing first.
 */
export function sendLastThenClose(transport: SessionTransport, message: OutgoingMessage, close: () => void): void {
  void Promise.resolve()
    .then(() => {
      // A send that fails or never settles changes nothing: the transport is closed either way.
      transport.send(message).catch(() => undefined);
    })
    .catch(() => undefined)
    .finally(close);
}

export interface SessionTransport {
  /** Sends one message; resolves when more may be sent without unbounded buffering (`SENT` when that is now). */
  send(message: OutgoingMessage): Promise<void>;
  /** Closes after everything already sent has been flushed. */
  close(code: number, reason?: string): void;
  pauseReading(): void;
  resumeReading(): void;
  readonly isOpen: boolean;
}

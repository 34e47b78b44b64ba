/**
 * The transport seen by the protocol runtime: send one complete message,
 * close with a status, stop and resume reading. `WsTransport` is the real
 * one; tests may supply an in-memory one. Encoding happens here so the
 * runtime works with typed messages only.
 */
import type { Writable } from "node:stream";
import type { WebSocket } from "ws";
import {
  type EncodeOptions,
  type EnvelopePool,
  encodeOutputStreamItemWithCanonicalValue,
  encodeServerMessage,
  type OutputStreamItemHead,
  type ServerMessage,
} from "@golem-stream/wire";

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

export class WsTransport implements SessionTransport {
  readonly #socket: WebSocket;
  readonly #highWaterBytes: number;
  readonly #stream: Writable | undefined;
  readonly #onBackpressure: () => void;
  readonly #envelopes: EnvelopePool | undefined;
  #corked = false;

  /**
   * `stream` is the upgraded TCP socket under `socket`. When given, the
   * messages sent in one burst (everything until the current tick's work is
   * done: a commit's ACKs, a pump's batch of events) leave in one write
   * instead of one system call each. `envelopes`, when given, holds the
   * memory of large binary envelopes, each returned once its frame is written.
   */
  constructor(
    socket: WebSocket,
    highWaterBytes: number,
    stream?: Writable,
    onBackpressure: () => void = () => {},
    envelopes?: EnvelopePool,
  ) {
    this.#socket = socket;
    this.#highWaterBytes = highWaterBytes;
    this.#stream = stream;
    this.#onBackpressure = onBackpressure;
    this.#envelopes = envelopes;
  }

  get isOpen(): boolean {
    return this.#socket.readyState === this.#socket.OPEN;
  }

  send(message: OutgoingMessage): Promise<void> {
    if (!this.isOpen) {
      // Nothing is sent, and nothing may count as sent: a sender that went on
      // at once would run through the whole log into a closing socket, and
      // report every event delivered (releasing the producers' windows).
      // It resumes after the close event has ended its attachment.
      if (this.#socket.readyState === this.#socket.CLOSED) return SENT;
      return new Promise((resolve) => this.#socket.once("close", () => resolve()));
    }
    const data = encodeOutgoing(message, this.#envelopes?.encodeOptions);
    const binary = typeof data !== "string";
    // A server's frame is written from the envelope itself: its memory goes back to the pool
    // only in the send callback, after the write (or its failure).
    const written = this.#envelopes?.whenWritten(data);
    this.#corkUntilNextTick();
    // Below the high-water mark the caller may go on at once; above it, it
    // waits until this message has been handed to the kernel, so a client
    // that does not read stops producers instead of growing a buffer.
    if (this.#socket.bufferedAmount < this.#highWaterBytes) {
      this.#socket.send(data, { binary }, written);
      return SENT;
    }
    this.#onBackpressure();
    return new Promise((resolve) =>
      this.#socket.send(data, { binary }, () => {
        written?.();
        resolve();
      }),
    );
  }

  /**
   * Holds writes until the microtasks of this turn have run. `ws` corks the
   * socket around each frame itself; corks nest, so the frames of a burst
   * are written together on the outer uncork. The bytes stay counted in
   * `bufferedAmount`, so the high-water check above still bounds a burst,
   * and a sender waiting for its callback waits at most until this tick ends.
   */
  #corkUntilNextTick(): void {
    const stream = this.#stream;
    if (stream === undefined || this.#corked) return;
    this.#corked = true;
    stream.cork();
    process.nextTick(() => {
      this.#corked = false;
      stream.uncork();
    });
  }

  close(code: number, reason = ""): void {
    if (this.#socket.readyState === this.#socket.OPEN || this.#socket.readyState === this.#socket.CONNECTING) {
      this.#socket.close(code, reason);
    }
  }

  pauseReading(): void {
    if (this.isOpen) this.#socket.pause();
  }

  resumeReading(): void {
    if (this.isOpen) this.#socket.resume();
  }
}

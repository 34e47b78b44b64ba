/**
 * The real `SessionTransport`: one `ws` WebSocket, with writes of a burst
 * corked into one system call (its small text messages framed here, into
 * one buffer: wire's `TextFrameBurst`) and a high-water mark that makes a
 * sender wait for a client that does not read.
 */
import type { Writable } from "node:stream";
import type { WebSocket } from "ws";
import type { EnvelopePool } from "@golem-stream/wire";
import { TextFrameBurst } from "@golem-stream/wire/internal";
import { encodeOutgoing, type OutgoingMessage, SENT, type SessionTransport } from "./transport.js";

export class WsTransport implements SessionTransport {
  readonly #socket: WebSocket;
  readonly #highWaterBytes: number;
  readonly #stream: Writable | undefined;
  readonly #onBackpressure: () => void;
  readonly #envelopes: EnvelopePool | undefined;
  /** Small text messages (ACKs, output items) framed here, a burst of them one write; undefined without `stream`. */
  readonly #frames: TextFrameBurst | undefined;
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
    // A client that reads slowly keeps its queued bursts alive: they are copies then, not slab views.
    this.#frames =
      stream === undefined
        ? undefined
        : new TextFrameBurst((bytes) => stream.write(bytes), {
            masked: false,
            backlogged: () => stream.writableLength > 0,
            // Written once this tick's work is done, only while the socket is open (after ws's close frame, none may follow).
            schedule: (task) => process.nextTick(task),
            open: () => this.isOpen,
          });
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
    const frames = this.#frames;
    // Below the high-water mark the caller may go on at once; above it, it
    // waits until this message has been handed to the kernel (ws's callback),
    // so a client that does not read stops producers instead of growing a buffer.
    const belowHighWater = this.#socket.bufferedAmount < this.#highWaterBytes;
    if (frames !== undefined && typeof data === "string" && belowHighWater && TextFrameBurst.fits(data)) {
      frames.add(data);
      return SENT;
    }
    // Whatever ws writes goes after the frames framed before it.
    frames?.flush();
    const binary = typeof data !== "string";
    // A server's frame is written from the envelope itself: its memory goes back to the pool
    // only in the send callback, after the write (or its failure).
    const written = this.#envelopes?.whenWritten(data);
    this.#corkUntilNextTick();
    if (belowHighWater) {
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
      // The peer's close frame ends the handshake: a socket paused (backpressure, or a turn's share
      // read) would never read it, and would hold the connection open until ws's 30 s close timer.
      this.#socket.resume();
      // The messages sent before the close go before its frame.
      if (this.isOpen) this.#frames?.flush();
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

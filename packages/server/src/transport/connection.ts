/**
 * One WebSocket's protocol state machine (sections 1, 6.2, 11, 12):
 * first message, then stream traffic routed to its attachment. It reads
 * through a bounded inbound queue: when the runtime is slow (a full input
 * queue, no byte permits) the queue fills and the socket stops being read,
 * which backpressures the client through TCP. The same happens while the
 * node's byte budget is spent (invocation/node-budget.ts): messages received
 * and not yet decoded count in it, until their session's permits take over.
 * And for the rest of a turn of the event loop once the connection has read
 * `maxReadBytesPerTurn` in it, so that one busy client cannot hold the loop
 * (#countTurn).
 *
 * Cancels: a `streamCancel` never waits for the session's permits (it holds
 * no data and frees what it cancels), so a client can always stop a session
 * whose agent no longer reads input, on a new connection if this one is
 * stuck behind that input. When the client closes, the cancels it sent
 * before its close that were already read here are applied even though the
 * input in front of them never will be: the server's close frame tells the
 * client that everything before its close was read (client.md §10a).
 *
 * Failure rules: a failure before acceptance answers `invocationRejected`
 * when the attempt id is known, then closes 1002 (1009 for limits); a
 * message that cannot even name its attempt closes 1002 directly. After
 * acceptance a client violation is reported with the accepted attempt id
 * and closes the socket; the session keeps running (only detached).
 *
 * Why one file: the first-message rules, the bounded inbound queue and the cancel shortcut all act
 * on the same queue and socket state, and the order between them (a cancel overtaking queued
 * input) is the point of the file.
 */
import {
  CLOSE_INTERNAL_ERROR,
  CLOSE_MESSAGE_TOO_BIG,
  CLOSE_PROTOCOL_ERROR,
  decodeClientMessage,
  ProtocolError,
  recoverAttemptId,
  type ClientMessage,
  type ClientStreamCancel,
  type ErrorCode,
} from "@golem-stream/wire";
import type { Attachment } from "../attachment/attachment.js";
import type { ClientStreamMessage } from "../attachment/attachment-input.js";
import type { ServerObserver } from "../observability/server-observer.js";
import type { Logger, Principal, ServerLimits } from "../options.js";
import type { NodeBudget } from "../invocation/node-budget.js";
import type { SessionRuntime } from "../admission/session-runtime.js";
import { sendLastThenClose, type SessionTransport } from "./transport.js";
import { isOwnershipLost } from "../store/ownership.js";

/**
 * The largest text message decoded before its permits are held, to find a
 * `streamCancel` behind a full session budget. A cancel is under 100 bytes;
 * the rest allows whitespace, and the bound keeps a decode ahead of the
 * permits (section 12) to a few hundred bytes per connection.
 */
const MAX_CANCEL_BYTES = 512;

interface Inbound {
  readonly data: Uint8Array;
  readonly isBinary: boolean;
  /** Received before invocationAccepted was handed to the socket: the client sent it without having seen it. */
  readonly beforeAcceptance: boolean;
  /** What it counts in the node's budget until it is decoded: what its session's permits will take (text twice, see #process). */
  readonly nodeBytes: number;
}

export class Connection {
  readonly #transport: SessionTransport;
  readonly #caller: Principal;
  readonly #runtime: SessionRuntime;
  readonly #limits: ServerLimits;
  readonly #logger: Logger;
  readonly #observer: ServerObserver;
  readonly #node: NodeBudget;
  readonly #inbound: Inbound[] = [];
  #processing = false;
  #paused = false;
  /** Bytes of messages received in this turn of the event loop, and whether its end is scheduled (#countTurn). */
  #turnBytes = 0;
  #turnEndScheduled = false;
  /** Reading stopped until the turn ends: this turn's share of the socket is used up. */
  #yielding = false;
  #awaitingRelief = false;
  #awaitingDrain = false;
  #state: "awaiting-first" | "starting" | "attached" | "closed" = "awaiting-first";
  #attachment: Attachment | undefined;
  #acceptanceSent = false;
  /**
   * Aborted when the connection closes, or its attachment ends first (revoked by a resume
   * elsewhere, whose messages queue behind this connection's: its socket may take `ws`'s close
   * timeout to close, a half-open peer never answering the close): a message waiting for
   * permits is dropped. One signal for the connection's life (`AbortSignal.any` per waiting
   * message would keep an entry per message in its sources on Node 20).
   */
  readonly #waitsEnd = new AbortController();

  constructor(transport: SessionTransport, caller: Principal, runtime: SessionRuntime) {
    this.#transport = transport;
    this.#caller = caller;
    this.#runtime = runtime;
    this.#limits = runtime.deps.limits;
    this.#logger = runtime.deps.logger;
    this.#observer = runtime.deps.observer;
    this.#node = runtime.deps.nodeBudget;
  }

  /** One complete WebSocket message. */
  receive(data: Uint8Array, isBinary: boolean): void {
    if (this.#state === "closed") return;
    const limit = isBinary ? this.#limits.maxBinaryMessageBytes : this.#limits.maxTextMessageBytes;
    if (data.length > limit) {
      this.#violation("limit-exceeded", CLOSE_MESSAGE_TOO_BIG);
      this.#close(CLOSE_MESSAGE_TOO_BIG);
      return;
    }
    this.#countTurn(data.length);
    const nodeBytes = isBinary ? data.length : 2 * data.length;
    this.#inbound.push({ data, isBinary, beforeAcceptance: !this.#acceptanceSent, nodeBytes });
    this.#node.charge(nodeBytes);
    if (!this.#paused) {
      if (this.#inbound.length >= this.#limits.maxPendingInboundMessages) this.#pause("inbound-queue");
      // This message itself holds some of the budget until it is taken: every connection stops
      // here, and one whose session holds none reads on once it is taken (#maybeResume).
      else if (this.#node.spent) this.#pause("node-budget");
    }
    if (!this.#processing) this.#drain();
  }

  /**
   * Bounds what one connection reads in one turn of the event loop. libuv reads a socket up to
   * 32 times (2 MiB) before it looks at anything else, so a client streaming small items had
   * each turn handle about 12 000 of them (50 ms): the completions of journal syncs, and so the
   * ACKs, waited for the turn's end, and every item stayed alive across young-generation
   * collections until then. Past `maxReadBytesPerTurn` reading stops, after the chunk being
   * parsed, until the next turn.
   */
  #countTurn(bytes: number): void {
    this.#turnBytes += bytes;
    if (!this.#turnEndScheduled) {
      this.#turnEndScheduled = true;
      setImmediate(this.#turnEnded);
    }
    if (this.#turnBytes >= this.#limits.maxReadBytesPerTurn && !this.#yielding) {
      this.#yielding = true;
      this.#transport.pauseReading();
    }
  }

  readonly #turnEnded = (): void => {
    this.#turnEndScheduled = false;
    this.#turnBytes = 0;
    if (!this.#yielding) return;
    this.#yielding = false;
    this.#readOn();
  };

  /** Reads the socket again unless backpressure or this turn's share still holds it (both stop reading; either may end first). */
  #readOn(): void {
    if (!this.#paused && !this.#yielding && this.#state !== "closed") this.#transport.resumeReading();
  }

  #pause(reason: "inbound-queue" | "node-budget"): void {
    this.#paused = true;
    this.#observer.backpressure(reason);
    this.#transport.pauseReading();
    if (reason === "node-budget") this.#awaitRelief();
  }

  /**
   * Whether this connection holds bytes the node's budget counts. Only such
   * a connection stays paused while the budget is spent (#maybeResume): one whose
   * session holds none (a new start, an idle attachment, a client that only
   * reads) reads on, so sessions stuck holding the budget (an agent that
   * stops taking input, a store that stalls) stop only themselves, and a
   * start, a cancel or a close handshake still gets through. Messages it
   * has read and not yet handed on count as holding, so what it can add
   * before it stops is the overshoot the budget already allows (about one
   * message per connection).
   */
  #holdsNodeBytes(): boolean {
    return this.#inbound.length > 0 || (this.#attachment?.session.permits.countedHeld ?? 0) > 0;
  }

  /** Resumes (if still paused) when the node's budget is relieved or this session has handed on all it held: one listener of each at a time. */
  #awaitRelief(): void {
    if (!this.#awaitingRelief) {
      this.#awaitingRelief = true;
      this.#node.onceRelieved(() => {
        this.#awaitingRelief = false;
        this.#maybeResume();
      });
    }
    // (Messages still queued here are not waited for: the drain loop resumes after taking them.)
    const permits = this.#attachment?.session.permits;
    if (permits !== undefined && permits.countedHeld > 0 && !this.#awaitingDrain) {
      this.#awaitingDrain = true;
      permits.onceDrained(() => {
        this.#awaitingDrain = false;
        this.#maybeResume();
      });
    }
  }

  /** Reads the socket again once the inbound queue is half empty and the node's budget is not spent (or its session holds none of it). */
  readonly #maybeResume = (): void => {
    if (!this.#paused || this.#state === "closed") return;
    if (this.#inbound.length > this.#limits.maxPendingInboundMessages / 2) return; // #drain calls again
    if (this.#node.spent && this.#holdsNodeBytes()) {
      this.#awaitRelief();
      return;
    }
    this.#paused = false;
    this.#readOn();
  };

  /** The message is decoded or dropped: its bytes leave the node's count (its session's permits hold them from here). */
  #taken(inbound: Inbound): void {
    this.#node.release(inbound.nodeBytes);
  }

  /** Messages read and never to be handled (the connection closed): they leave the node's count. */
  #dropInbound(): void {
    for (const inbound of this.#inbound.splice(0)) this.#taken(inbound);
  }

  /**
   * The socket closed (either side): the session is only detached, after the
   * cancels already read from the client are applied (see the file comment).
   */
  transportClosed(): void {
    const attached = this.#state === "attached" ? this.#attachment : undefined;
    this.#state = "closed";
    this.#waitsEnd.abort();
    const cancels = attached === undefined || attached.ended ? [] : this.#cancelsRead();
    this.#dropInbound();
    if (attached === undefined || cancels.length === 0) {
      this.#attachment?.transportClosed();
      return;
    }
    void applyCancels(attached, cancels).finally(() => attached.transportClosed());
  }

  /** The `streamCancel`s among the messages read and not yet handled; anything else in them is dropped. */
  #cancelsRead(): ClientStreamCancel[] {
    const cancels: ClientStreamCancel[] = [];
    for (const inbound of this.#inbound) {
      if (inbound.isBinary || inbound.beforeAcceptance || inbound.data.length > MAX_CANCEL_BYTES) continue;
      try {
        const message = decodeClientMessage(inbound.data, false);
        if (message.type === "streamCancel") cancels.push(message);
      } catch {
        // Not read as anything: dropped like the rest.
      }
    }
    return cancels;
  }

  /**
   * Handles the queued messages in order. Synchronously while each waits for nothing (the
   * common case: no promise, no async frame and no microtask hop per message); from the first
   * that waits, in `#drainAfter`, which comes back here once it is handled. `#processing`
   * stays set across the wait, so a message received meanwhile only queues.
   */
  #drain(): void {
    this.#processing = true;
    try {
      for (;;) {
        const next = this.#inbound.shift();
        if (next === undefined) break;
        this.#maybeResume();
        const pending = this.#process(next);
        if (pending !== undefined) {
          void this.#drainAfter(pending);
          return;
        }
        if (this.#state === "closed") break;
      }
    } catch (error) {
      this.#fault(error);
    }
    this.#processing = false;
  }

  async #drainAfter(pending: Promise<void>): Promise<void> {
    try {
      await pending;
    } catch (error) {
      this.#fault(error);
      this.#processing = false;
      return;
    }
    if (this.#state === "closed") this.#processing = false;
    else this.#drain();
  }

  /** #process reports every expected failure itself: this is a bug path. */
  #fault(error: unknown): void {
    this.#logger.error("connection failed", { event: "connection.fault", error: String(error) });
    this.#close(CLOSE_INTERNAL_ERROR);
  }

  #process(inbound: Inbound): Promise<void> | undefined {
    if (this.#state === "awaiting-first") {
      this.#taken(inbound);
      return this.#first(inbound);
    }
    const attachment = this.#attachment;
    if (this.#state !== "attached" || attachment === undefined || attachment.ended) {
      this.#taken(inbound);
      return undefined;
    }
    const permits = attachment.session.permits;
    // Permits before decoding (section 12): a session holding its budget in
    // unconsumed input or unsent output stops decoding here, and the socket
    // stops being read. A text message (a value item) is charged twice its
    // size: the item is held decoded for the agent, and for the store until
    // its commit either re-encoded or (a string item, values.ts
    // canonicalValueBytes) as the message's own bytes, whose read buffer it
    // keeps (invocation/session-input.ts, acceptInput).
    const permitBytes = Math.min(inbound.isBinary ? inbound.data.length : 2 * inbound.data.length, permits.capacity);
    if (permits.tryAcquire(permitBytes)) return this.#decodeHeld(inbound, attachment, permitBytes);
    this.#observer.backpressure("session-budget");
    if (!inbound.isBinary && inbound.data.length <= MAX_CANCEL_BYTES) {
      // Small enough to be a cancel, which must not wait behind the input it is to stop.
      const message = this.#decode(inbound, attachment);
      if (message === undefined) return undefined;
      if (message.type === "streamCancel") return this.#handle(message, attachment, 0);
      return permits
        .acquire(permitBytes, this.#waitsEnd.signal)
        .then((held) => (held ? this.#handle(message, attachment, permitBytes) : undefined));
    }
    return permits.acquire(permitBytes, this.#waitsEnd.signal).then((held) =>
      // Not held: the connection closed, or its attachment ended, while it waited.
      held ? this.#decodeHeld(inbound, attachment, permitBytes) : this.#taken(inbound),
    );
  }

  /** Decodes and hands on a message whose permits are held; they go back if it is not one. */
  #decodeHeld(inbound: Inbound, attachment: Attachment, permitBytes: number): Promise<void> | undefined {
    const message = this.#decode(inbound, attachment);
    if (message !== undefined) return this.#handle(message, attachment, permitBytes);
    attachment.session.permits.release(permitBytes);
    return undefined;
  }

  /** Decodes a message after acceptance; undefined (the connection failed) if it is not one. */
  #decode(inbound: Inbound, attachment: Attachment): ClientStreamMessage | undefined {
    this.#taken(inbound);
    try {
      const message = decodeClientMessage(inbound.data, inbound.isBinary);
      if (message.type === "invocationStart" || message.type === "resumeAttach") {
        throw new ProtocolError("protocol-error", `${message.type} is only valid as the first message`, { retryable: true });
      }
      if (inbound.beforeAcceptance) {
        // Section 1: nothing is valid before invocationAccepted; its mappings announce every channel (section 8).
        throw new ProtocolError("invalid-channel", `${message.type} was sent before invocationAccepted announced its channel`);
      }
      return message;
    } catch (error) {
      this.#failAttached(error, attachment);
      return undefined;
    }
  }

  /** Hands on one decoded message whose permits are held; a promise only if handling it waits. */
  #handle(message: ClientStreamMessage, attachment: Attachment, permitBytes: number): Promise<void> | undefined {
    let pending: Promise<void> | undefined;
    try {
      pending = attachment.handle(message, permitBytes);
    } catch (error) {
      this.#failAttached(error, attachment);
      return undefined;
    }
    return pending?.catch((error: unknown) => this.#failAttached(error, attachment));
  }

  async #first(inbound: Inbound): Promise<void> {
    this.#state = "starting";
    if (inbound.isBinary) {
      // No attempt identity can be recovered from a binary message.
      this.#violation("protocol-error", CLOSE_PROTOCOL_ERROR);
      this.#close(CLOSE_PROTOCOL_ERROR);
      return;
    }
    let message: ClientMessage;
    try {
      message = decodeClientMessage(inbound.data, false);
    } catch (error) {
      const attemptId = recoverAttemptId(inbound.data, false);
      if (attemptId === undefined) {
        this.#violation(error instanceof ProtocolError ? error.code : "invalid-message", closeCodeOf(error));
        this.#close(closeCodeOf(error));
      } else {
        const failure = this.#reject(error, attemptId, false);
        this.#observer.attachRejected(failure.code, "unknown");
      }
      return;
    }
    if (message.type !== "invocationStart" && message.type !== "resumeAttach") {
      // Stream traffic before acceptance has no attempt to report against.
      this.#violation("protocol-error", CLOSE_PROTOCOL_ERROR);
      this.#close(CLOSE_PROTOCOL_ERROR);
      return;
    }
    try {
      const transport = this.#noticingAcceptance();
      const attachment =
        message.type === "invocationStart"
          ? await this.#runtime.start(message, this.#caller, transport)
          : await this.#runtime.resume(message, this.#caller, transport);
      if (this.#closed()) {
        attachment.transportClosed();
        return;
      }
      this.#attachment = attachment;
      this.#state = attachment.ended ? "closed" : "attached";
      if (attachment.ended) this.#waitsEnd.abort();
      else attachment.endedSignal.addEventListener("abort", () => this.#waitsEnd.abort(), { once: true });
    } catch (error) {
      const failure = this.#reject(error, message.attemptId, false);
      this.#observer.attachRejected(failure.code, message.type === "invocationStart" ? "start" : message.operation);
    }
  }

  /**
   * The transport as the runtime sees it, noting when `invocationAccepted`
   * is handed to the socket. A message received before that moment was sent
   * before the client could have seen the acceptance (section 1); one
   * received after it may be legitimate even if its bytes were still corked.
   */
  #noticingAcceptance(): SessionTransport {
    const inner = this.#transport;
    return {
      send: (message) => {
        if (message.type === "invocationAccepted") this.#acceptanceSent = true;
        return inner.send(message);
      },
      close: (code, reason) => inner.close(code, reason),
      pauseReading: () => inner.pauseReading(),
      resumeReading: () => inner.resumeReading(),
      get isOpen() {
        return inner.isOpen;
      },
    };
  }

  /** The state may change while a first message is being handled (the socket can close). */
  #closed(): boolean {
    return this.#state === "closed";
  }

  #failAttached(error: unknown, attachment: Attachment): void {
    if (isOwnershipLost(error)) {
      // Not a fault of this node's nor the client's: another node claimed the session while this
      // one handled the message. The client resumes (1001) and reads the new owner's outcome.
      attachment.session.ownershipLost(error);
      attachment.ownershipMoved();
      return;
    }
    const failure = this.#reject(error, attachment.attemptId, true);
    attachment.violated(failure.code, failure.closeCode);
    attachment.transportClosed();
  }

  /** A violation with no `invocationRejected`: reported against the attachment if there is one. */
  #violation(code: ErrorCode, closeStatus: number): void {
    const attachment = this.#attachment;
    if (attachment !== undefined && !attachment.ended) attachment.violated(code, closeStatus);
    else this.#observer.violation(code, closeStatus);
  }

  /** `invocationRejected` with safe text, then the close status of its code. */
  #reject(error: unknown, attemptId: string, afterAcceptance: boolean): ProtocolError {
    const failure = toProtocolError(error, this.#logger);
    const retryable = failure.code === "protocol-error" ? afterAcceptance : failure.retryable;
    sendLastThenClose(
      this.#transport,
      { type: "invocationRejected", attemptId, code: failure.code, message: failure.message, retryable },
      () => this.#close(failure.closeCode),
    );
    this.#state = "closed";
    return failure;
  }

  #close(code: number): void {
    this.#state = "closed";
    this.#dropInbound();
    this.#transport.close(code, "");
  }
}

/**
 * Applies cancels read before the socket closed, in order, before the
 * attachment detaches. Their answers go nowhere (the socket is closed); a
 * cancel the attachment refuses (an unknown channel, a second one) is
 * dropped like any message after a close.
 */
async function applyCancels(attachment: Attachment, cancels: readonly ClientStreamCancel[]): Promise<void> {
  for (const cancel of cancels) {
    if (attachment.ended) return;
    try {
      await attachment.handle(cancel, 0);
    } catch {
      // See above.
    }
  }
}

/** Any failure as a public error: unexpected ones become a bare `internal-error`. */
function toProtocolError(error: unknown, logger: Logger): ProtocolError {
  if (error instanceof ProtocolError) return error;
  logger.error("unexpected failure while handling a message", { event: "connection.fault", error: String(error) });
  return new ProtocolError("internal-error", "internal error", { cause: error });
}

function closeCodeOf(error: unknown): number {
  return error instanceof ProtocolError ? error.closeCode : CLOSE_PROTOCOL_ERROR;
}

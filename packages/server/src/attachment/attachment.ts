/**
 * The attachment folder owns one transport's view of a live session: the
 * connection-local channel table, the output pumps that replay the durable
 * log from the client's cursors, the client's stream messages after
 * acceptance (resends, grouped ACKs). It sends only what the store holds;
 * running the invocation is invocation/'s.
 *
 * One transport's attachment to a live session: the connection-local
 * channel table, the acceptance and the result, and the order of the end
 * (`invocationFinished` last). Its two halves live beside it: the output
 * pumps that replay the durable log to this client (output-pumps.ts) and
 * the handling of the client's stream messages (attachment-input.ts).
 *
 * Announcement before use (section 8) is kept by construction: a channel
 * becomes usable, and a stream's pump starts, only after the message that
 * carries its mapping has been handed to the transport.
 */
import { randomUUID } from "node:crypto";
import {
  CLOSE_INTERNAL_ERROR,
  CLOSE_NORMAL,
  type ErrorCode,
  type InvocationResultBody,
  type JsonValue,
  type ServerCancelReason,
  type ServerMessage,
  type StreamMapping,
} from "@golem-stream/wire";
import { AttachmentInput, type ClientStreamMessage } from "./attachment-input.js";
import type { AttachmentLink } from "./attachment-link.js";
import { ChannelTable } from "./channel-table.js";
import type { LiveSession } from "../invocation/live-session.js";
import type { AttachmentSink } from "../invocation/attachment-sink.js";
import { OutputPumps, type CursorPosition } from "./output-pumps.js";
import type { StreamState } from "../invocation/stream-state.js";
import type { AttachmentEnd, AttachmentObserver } from "../observability/server-observer.js";
import type { OutputEvent } from "../store/session-store.js";
import { isOwnershipLost } from "../store/ownership.js";
import { SENT, sendLastThenClose, type OutgoingMessage, type SessionTransport } from "../transport/transport.js";

/** WebSocket close status 1001: the server leaves this connection; the client resumes. */
const CLOSE_GOING_AWAY = 1001;

export interface AttachPlan {
  /** The client's verified cursors, by stream id. */
  readonly cursors: ReadonlyMap<string, CursorPosition>;
  /** Whether mappings resolve the start's provisional references (start and its replay). */
  readonly resolveProvisionalRefs: boolean;
}

export class Attachment implements AttachmentSink {
  readonly session: LiveSession;
  readonly attemptId: string;
  readonly generation: bigint;
  readonly attachmentId = randomUUID();
  readonly #transport: SessionTransport;
  readonly #channels = new ChannelTable();
  readonly #pumps: OutputPumps;
  readonly #input: AttachmentInput;
  readonly #onEnd: (attachment: Attachment) => void;
  /** Metrics, logs and the attachment's span (observability/). */
  readonly observed: AttachmentObserver;
  #resultSent = false;
  #finishedSent = false;
  /** Nothing but invocationAccepted may be sent before it. */
  #opened = false;
  #ended = false;
  readonly #endedSignal = new AbortController();

  constructor(
    session: LiveSession,
    attemptId: string,
    generation: bigint,
    transport: SessionTransport,
    onEnd: (attachment: Attachment) => void,
    observed: AttachmentObserver,
  ) {
    this.observed = observed;
    this.session = session;
    this.attemptId = attemptId;
    this.generation = generation;
    this.#transport = transport;
    this.#onEnd = onEnd;
    const link: AttachmentLink = {
      session,
      channels: this.#channels,
      isEnded: () => this.#ended,
      send: (message) => this.#send(message),
      mapping: (stream, withProvisionalRef) => this.#mapping(stream, withProvisionalRef),
      announced: (stream) => this.#announced(stream),
      fault: (error) => this.#fault(error),
      maybeFinish: () => this.#maybeFinish(),
    };
    this.#pumps = new OutputPumps(link);
    this.#input = new AttachmentInput(link, this);
  }

  get ended(): boolean {
    return this.#ended;
  }

  /**
   * Aborted when the attachment ends (replaced, closed, broken): a message of its connection
   * still waiting for the session's byte permits then leaves the queue, which the next
   * attachment's messages wait behind (a revoked connection's socket may take seconds to close).
   */
  get endedSignal(): AbortSignal {
    return this.#endedSignal.signal;
  }

  // ------------------------------------------------------------ opening

  /**
   * Sends `invocationAccepted` with the complete channel table for this
   * connection, then everything the client has not seen yet.
   */
  async open(plan: AttachPlan, idempotencyKey: string, owner: boolean): Promise<void> {
    // High-waters are reported only once committed: wait for input chunks
    // the previous owner handed to the store just before it was replaced,
    // and for an input terminal on its way to the store (one that fails is
    // then no terminal: the input is reported open).
    await Promise.all(this.session.streams().map((stream) => stream.inputCommitted));
    for (let writes = terminalWrites(this.session.streams()); writes.length > 0; writes = terminalWrites(this.session.streams())) {
      await Promise.all(writes);
    }
    if (this.#ended) return;
    const mappings: StreamMapping[] = [];
    const announcedNow: StreamState[] = [];
    const terminalInputs: StreamState[] = [];
    for (const stream of this.session.streams()) {
      if (stream.direction === "input") {
        mappings.push(this.#mapping(stream, this.#resolvesInAcceptance(stream, plan)));
        announcedNow.push(stream);
        if (stream.inputTerminal !== undefined) terminalInputs.push(stream);
        continue;
      }
      const unseen = this.#pumps.place(stream, plan.cursors.get(stream.streamId));
      if (!unseen) continue;
      // A stream a replayed message will announce on this connection (the result, an item): not
      // here. A revoked replay replays nothing, so its acceptance maps every stream (section 6.1:
      // "the current session token and mappings"), and starts none of them.
      if (owner && this.#pumps.exposedByReplay(stream)) continue;
      mappings.push(this.#mapping(stream, false));
      if (owner) announcedNow.push(stream);
    }
    const sent = this.#send({
      type: "invocationAccepted",
      attemptId: this.attemptId,
      idempotencyKey,
      mappings,
      sessionToken: this.session.record.sessionToken,
    });
    // The transport has taken the message (it keeps call order): from now on
    // every change may be sent, and the announced channels are usable.
    this.#opened = true;
    for (const stream of announcedNow) this.#announced(stream);
    // The client learns these channels together with their terminal, so no
    // item or end of its own can be in flight on them: any is stale
    // (invalid-channel). Items crossing a server cancel on the connection
    // that carried it are ignored instead (see AttachmentInput).
    for (const stream of terminalInputs) this.#channels.close(stream.streamId);
    await sent;
    if (!owner) {
      // An exact replay of an attempt whose attachment was superseded: the
      // client learns the current token and mappings, then resumes anew.
      this.revoke();
      return;
    }
    if (this.session.record.result !== undefined) await this.#sendResult();
    this.#maybeFinish();
  }

  /**
   * Whether an input's mapping in this acceptance carries its provisional
   * reference (section 4.3: "while resolving a client provisional
   * reference"). A parameter stream: in the acceptance of a start and of its
   * exact replay; a client holding a session token has resolved them. A
   * nested input: until the client is seen using it (an accepted item, its
   * own end or cancel). Before that it may have lost the ACK that announced
   * the stream, and the reference is its only way to find it (section 5.3).
   */
  #resolvesInAcceptance(stream: StreamState, plan: AttachPlan): boolean {
    if (stream.parent.kind === "params") return plan.resolveProvisionalRefs;
    if (stream.parent.kind !== "item") return false;
    const terminal = stream.inputTerminal;
    const usedByClient = stream.count > 0n || terminal?.kind === "end" || (terminal?.kind === "cancelled" && terminal.by === "client");
    return !usedByClient;
  }

  #mapping(stream: StreamState, withProvisionalRef: boolean): StreamMapping {
    const entry = this.#channels.assign(stream.streamId, stream.direction);
    if (stream.direction === "output") {
      return { channel: entry.channel, direction: "output", streamToken: stream.token };
    }
    return {
      channel: entry.channel,
      direction: "input",
      streamToken: stream.token,
      ...(withProvisionalRef && stream.provisionalRef !== undefined ? { provisionalRef: stream.provisionalRef } : {}),
      inputHighWater: { sequence: stream.count, terminal: stream.inputTerminal !== undefined },
    };
  }

  /** The mapping has been handed to the transport: the channel is usable and output may flow. */
  #announced(stream: StreamState): void {
    this.#channels.announce(stream.streamId);
    if (stream.direction === "output") this.#pumps.start(stream);
  }

  // ------------------------------------------------------------ result and end

  async #sendResult(): Promise<void> {
    if (this.#resultSent || this.#ended || !this.#opened) return;
    const text = this.session.record.result;
    if (text === undefined) return;
    this.#resultSent = true;
    const streams = this.session.resultStreams();
    const mappings = streams.map((stream) => this.#mapping(stream, false));
    await this.#send({ type: "invocationResult", mappings, result: JSON.parse(text) as InvocationResultBody });
    for (const stream of streams) this.#announced(stream);
    this.#maybeFinish();
  }

  /** `invocationFinished` goes last: after the result, every ACK and every output terminal on this connection. */
  #maybeFinish(): void {
    if (this.#finishedSent || this.#ended || !this.#opened || !this.session.finished || this.#input.busy) return;
    if (this.session.record.result !== undefined && !this.#resultSent) return;
    if (!this.#pumps.allDone()) return;
    this.#finishedSent = true;
    const outcome = JSON.parse(this.session.record.outcome ?? '{"kind":"success"}') as JsonValue;
    // Closed once the message is handed over, not once it drained: the close flushes what was sent
    // before it, and a client that stopped reading must not keep the socket and the session open.
    sendLastThenClose(this.#transport, { type: "invocationFinished", outcome: outcome as never }, () => {
      this.#end("finished");
      this.#transport.close(CLOSE_NORMAL, "");
    });
  }

  // ------------------------------------------------------------ sink (session → client)

  outputAppended(stream: StreamState, committed?: OutputEvent): void {
    this.#pumps.appended(stream, committed);
  }

  resultCommitted(): void {
    void this.#sendResult().catch((error: unknown) => this.#fault(error));
  }

  inputCancelledByServer(stream: StreamState, reason: ServerCancelReason): void {
    if (!this.#opened) return; // the acceptance's mappings will report the terminal
    this.#input.cancelledByServer(stream, reason);
  }

  finished(): void {
    this.#maybeFinish();
  }

  revoke(): void {
    // Once invocationFinished is handed to the transport nothing may follow it (section 6.9): the
    // attachment ends and closes with 1000 as soon as that send settles, replaced or not.
    if (this.#ended || this.#finishedSent) return;
    this.observed.revoked();
    this.#end("revoked");
    sendLastThenClose(this.#transport, { type: "attachmentRevoked", reason: "replaced" }, () =>
      this.#transport.close(CLOSE_NORMAL, "replaced"),
    );
  }

  /**
   * Another node claimed the session (fencing, store/ownership.ts): this node serves it no more.
   * The transport closes with 1001 (going away, as a drain does), so the client resumes and reads
   * what the store holds, the new owner's terminals and outcome included.
   */
  ownershipMoved(): void {
    if (this.#ended || this.#finishedSent) return;
    this.#end("closed");
    this.#transport.close(CLOSE_GOING_AWAY, "session moved");
  }

  // ------------------------------------------------------------ input (client → session)

  /**
   * Handles one decoded client message after acceptance (see
   * AttachmentInput). `permitBytes` are the session byte permits taken for
   * the raw message; this call owns them. Returns a promise only when handling waits (undefined: done).
   */
  handle(message: ClientStreamMessage, permitBytes: number): Promise<void> | undefined {
    return this.#input.handle(message, permitBytes);
  }

  // ------------------------------------------------------------ lifecycle

  /** The transport's own promise (`SENT` when the caller may go on at once); a failure to send rejects, never throws. */
  #send(message: OutgoingMessage): Promise<void> {
    if (this.#ended && message.type !== "invocationFinished") return SENT;
    try {
      return this.#transport.send(message);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The transport closed or was replaced: stop sending, keep the session running. */
  #end(reason: AttachmentEnd): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#endedSignal.abort();
    this.observed.ended(reason);
    this.session.detach(this);
    this.#onEnd(this);
  }

  transportClosed(): void {
    this.#end("closed");
  }

  /** The client broke the protocol: reported with its code and close status, then the attachment ends. */
  violated(code: ErrorCode, closeStatus: number): void {
    if (this.#ended) return;
    this.observed.violation(code, closeStatus);
    this.#end("violation");
  }

  #fault(error: unknown): void {
    // An input commit refused for a stale ownership epoch: not a fault of this node's, the session moved.
    if (isOwnershipLost(error)) return this.ownershipMoved();
    const logger = this.session.deps.logger;
    const fields = { event: "attach.fault", session: this.session.sessionId, error: String(error) };
    if (this.#ended) {
      // Faults still arriving after it ended (chunks in flight behind the first, all refused) are news to nobody.
      logger.debug?.("attachment failed", fields);
      return;
    }
    logger.error("attachment failed", fields);
    this.#end("fault");
    sendLastThenClose(
      this.#transport,
      { type: "invocationRejected", attemptId: this.attemptId, code: "internal-error", message: "internal error", retryable: true },
      () => this.#transport.close(CLOSE_INTERNAL_ERROR, ""),
    );
  }
}

/** The input terminals of `streams` still on their way to the store. */
function terminalWrites(streams: readonly StreamState[]): Promise<void>[] {
  const writes: Promise<void>[] = [];
  for (const stream of streams) if (stream.inputTerminalWrite !== undefined) writes.push(stream.inputTerminalWrite);
  return writes;
}

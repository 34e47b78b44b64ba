/**
 * One transport's attachment to a live session: the connection-local
 * channel table, the output pumps that replay the durable log to this
 * client, and the handling of the client's stream messages after
 * acceptance.
 *
 * Everything sent is read back from the store, so a first attachment, an
 * exact-attempt replay and a resume are the same code with different
 * starting cursors. Announcement before use (section 8) is kept by
 * construction: a stream's pump starts only after the message that carries
 * its mapping has been handed to the transport.
 */
import {
  CLOSE_INTERNAL_ERROR,
  CLOSE_NORMAL,
  encodeUtf8,
  ProtocolError,
  type ClientBinaryMessage,
  type ClientStreamCancel,
  type InputStreamEnd,
  type InputStreamItem,
  type InvocationResultBody,
  type JsonValue,
  type OutputOutcome,
  type SchemaValueJson,
  type ServerCancelReason,
  type ServerMessage,
  type StreamMapping,
} from "@golem-stream/wire";
import { ChannelTable } from "./channel-table.js";
import { GroupAcks, type GroupAck } from "./group-acks.js";
import type { AttachmentSink, LiveSession } from "./live-session.js";
import type { CursorPosition } from "./token-service.js";
import type { InputChunk, OutputEvent } from "./store/session-store.js";
import type { StreamState, InputItem } from "./stream-state.js";
import type { SessionTransport } from "./transport.js";
import { canonicalValue, checkBinaryItem, decodeValue, substituteStreamRefs } from "./values.js";
import { sameInput } from "./input-resend.js";

/** How many log events a pump reads per store query. */
const PUMP_BATCH = 64;

interface Pump {
  readonly stream: StreamState;
  /** Next sequence to read from the log. */
  next: bigint;
  state: "waiting" | "active" | "done";
  running: boolean;
  /** Set by every kick: there may be events the pump has not read yet. */
  dirty: boolean;
}

export interface AttachPlan {
  /** The client's verified cursors, by stream id. */
  readonly cursors: ReadonlyMap<string, CursorPosition>;
  /** Whether mappings resolve the start's provisional references (start and its replay). */
  readonly resolveProvisionalRefs: boolean;
}

export class Attachment implements AttachmentSink {
  readonly session: LiveSession;
  readonly attemptId: string;
  readonly #transport: SessionTransport;
  readonly #channels = new ChannelTable();
  readonly #pumps = new Map<string, Pump>();
  readonly #onEnd: (attachment: Attachment) => void;
  #resultSent = false;
  #finishedSent = false;
  /** Nothing but invocationAccepted may be sent before it. */
  #opened = false;
  #handling = 0;
  #ended = false;
  readonly #groupAcks = new GroupAcks<StreamState, StreamState>(
    (stream, ack) => this.#sendGroupAck(stream, ack),
    () => this.#maybeFinish(),
  );

  constructor(session: LiveSession, attemptId: string, transport: SessionTransport, onEnd: (attachment: Attachment) => void) {
    this.session = session;
    this.attemptId = attemptId;
    this.#transport = transport;
    this.#onEnd = onEnd;
  }

  get ended(): boolean {
    return this.#ended;
  }

  // ------------------------------------------------------------ opening

  /**
   * Sends `invocationAccepted` with the complete channel table for this
   * connection, then everything the client has not seen yet.
   */
  async open(plan: AttachPlan, idempotencyKey: string, owner: boolean): Promise<void> {
    // High-waters are reported only once committed: wait for input chunks
    // the previous owner handed to the store just before it was replaced.
    await Promise.all(this.session.streams().map((stream) => stream.inputCommitted));
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
      const cursor = plan.cursors.get(stream.streamId);
      const pump: Pump = {
        stream,
        next: cursor === undefined ? 0n : cursor.position + 1n,
        state: cursor?.event === "terminal" ? "done" : "waiting",
        running: false,
        dirty: false,
      };
      this.#pumps.set(stream.streamId, pump);
      if (pump.state === "done" || this.#exposedByReplay(stream)) continue;
      mappings.push(this.#mapping(stream, false));
      announcedNow.push(stream);
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
    // that carried it are ignored instead (see #inputStream).
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

  /**
   * Whether a replayed message on this connection will carry the stream's
   * mapping: the result (always re-sent) or an item its parent's pump
   * will replay.
   */
  #exposedByReplay(stream: StreamState): boolean {
    const parent = stream.parent;
    if (parent.kind === "result") return true;
    if (parent.kind !== "item") return false;
    const pump = this.#pumps.get(parent.streamId);
    return pump !== undefined && pump.state !== "done" && pump.next <= parent.sequence;
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
    if (stream.direction !== "output") return;
    let pump = this.#pumps.get(stream.streamId);
    if (pump === undefined) {
      pump = { stream, next: 0n, state: "waiting", running: false, dirty: false };
      this.#pumps.set(stream.streamId, pump);
    }
    if (pump.state === "waiting") {
      pump.state = "active";
      this.#kick(pump);
    }
  }

  // ------------------------------------------------------------ output

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

  #kick(pump: Pump): void {
    if (pump.state !== "active" || this.#ended) return;
    pump.dirty = true;
    if (pump.running) return;
    pump.running = true;
    void this.#runPump(pump).catch((error: unknown) => this.#fault(error));
  }

  /**
   * Sends the log from `pump.next` on while there may be more. `dirty` is
   * set by every kick, and `running` is cleared in the same synchronous step
   * that sees it clear, so no kick can fall between two runs.
   */
  async #runPump(pump: Pump): Promise<void> {
    const store = this.session.deps.store;
    try {
      while (pump.dirty && pump.state === "active" && !this.#ended) {
        pump.dirty = false;
        const events = await store.readOutput(pump.stream.streamId, pump.next, PUMP_BATCH);
        for (const event of events) {
          if (this.#ended) return;
          await this.#sendEvent(pump, event);
          if (this.#ended) return;
          this.session.delivered(pump.stream);
          if (event.event === "terminal") {
            pump.state = "done";
            this.#channels.close(pump.stream.streamId);
            this.#maybeFinish();
            return;
          }
          pump.next = event.sequence + event.itemCount;
        }
        if (events.length === PUMP_BATCH) pump.dirty = true; // a full batch: there may be more
      }
    } finally {
      pump.running = false;
    }
  }

  async #sendEvent(pump: Pump, event: OutputEvent): Promise<void> {
    const stream = pump.stream;
    const channel = this.#channels.forStream(stream.streamId)?.channel ?? 0;
    const cursorToken = this.session.deps.tokens.mintCursor(this.session.owner, this.session.sessionId, {
      streamId: stream.streamId,
      position: event.sequence,
      event: event.event,
    });
    if (event.event === "terminal") {
      await this.#send({
        type: "outputStreamEnd",
        channel,
        cursorToken,
        outcome: JSON.parse(event.outcome) as OutputOutcome,
        sequence: event.sequence,
      });
      return;
    }
    if (stream.elementKind === "u8") {
      await this.#send({ type: "output-u8", channel, sequence: event.sequence, cursorToken, payload: event.data });
      return;
    }
    if (stream.elementKind === "binary") {
      await this.#send({
        type: "output-binary",
        channel,
        sequence: event.sequence,
        cursorToken,
        payload: event.data,
        ...(event.mimeType === undefined ? {} : { mimeType: event.mimeType }),
      });
      return;
    }
    const children = this.session.childrenOf(stream.streamId, event.sequence);
    const mappings = children.map((child) => this.#mapping(child, false));
    await this.#send({
      type: "outputStreamItem",
      channel,
      cursorToken,
      mappings,
      sequence: event.sequence,
      value: JSON.parse(new TextDecoder().decode(event.data)) as SchemaValueJson,
    });
    for (const child of children) this.#announced(child);
  }

  /** `invocationFinished` goes last: after the result and every output terminal on this connection. */
  #maybeFinish(): void {
    if (this.#finishedSent || this.#ended || !this.#opened || !this.session.finished || this.#handling > 0) return;
    if (this.#groupAcks.pending > 0) return;
    if (this.session.record.result !== undefined && !this.#resultSent) return;
    for (const stream of this.session.streams()) {
      if (stream.direction !== "output") continue;
      const pump = this.#pumps.get(stream.streamId);
      if (pump === undefined || pump.state !== "done") return;
    }
    this.#finishedSent = true;
    const outcome = JSON.parse(this.session.record.outcome ?? '{"kind":"success"}') as JsonValue;
    void this.#send({ type: "invocationFinished", outcome: outcome as never })
      .catch((error: unknown) => this.session.deps.logger.warn("could not send invocationFinished", { error: String(error) }))
      .finally(() => {
        this.#end();
        this.#transport.close(CLOSE_NORMAL, "");
      });
  }

  // ------------------------------------------------------------ sink (session → client)

  outputAppended(stream: StreamState): void {
    const pump = this.#pumps.get(stream.streamId);
    if (pump !== undefined) this.#kick(pump);
  }

  resultCommitted(): void {
    void this.#sendResult().catch((error: unknown) => this.#fault(error));
  }

  inputCancelledByServer(stream: StreamState, reason: ServerCancelReason): void {
    if (!this.#opened) return; // the acceptance's mappings will report the terminal
    const entry = this.#channels.forStream(stream.streamId);
    if (entry === undefined || entry.state === "reserved") return;
    // The sends are issued now, in order: the transport keeps call order,
    // so the terminal ACK cannot fall behind a later invocationFinished.
    this.#groupAcks.flush(stream);
    void this.#send({ type: "streamCancel", channel: entry.channel, reason }).catch((error: unknown) => this.#fault(error));
    void this.#send(this.#ack(stream, [])).catch((error: unknown) => this.#fault(error));
  }

  finished(): void {
    this.#maybeFinish();
  }

  revoke(): void {
    if (this.#ended) return;
    this.#end();
    void Promise.resolve()
      .then(() => this.#transport.send({ type: "attachmentRevoked", reason: "replaced" }))
      .catch(() => undefined) // the transport is being closed either way
      .finally(() => this.#transport.close(CLOSE_NORMAL, "replaced"));
  }

  // ------------------------------------------------------------ input (client → session)

  /**
   * Handles one decoded client message after acceptance. `permitBytes` are
   * the session byte permits taken for the raw message; this call owns
   * them (they move to the input queue or are released).
   */
  async handle(message: InputStreamItem | InputStreamEnd | ClientStreamCancel | ClientBinaryMessage, permitBytes: number): Promise<void> {
    let kept = false;
    // invocationFinished waits for the ACK of a message being handled.
    this.#handling++;
    try {
      switch (message.type) {
        case "inputStreamItem":
          kept = await this.#inputItem(message, permitBytes);
          return;
        case "input-u8":
        case "input-binary":
          kept = await this.#inputBinary(message, permitBytes);
          return;
        case "inputStreamEnd":
          await this.#inputEnd(message);
          return;
        case "streamCancel":
          await this.#cancel(message);
          return;
      }
    } finally {
      if (!kept) this.session.permits.release(permitBytes);
      this.#handling--;
      this.#maybeFinish();
    }
  }

  /**
   * The input stream on `channel`, or undefined when the server cancelled it
   * on this connection: the client may have any amount of input in flight
   * across that cancel (its unACKed window), so late data is ignored, not a
   * violation. Inputs already terminal at acceptance have a closed channel.
   */
  #inputStream(channel: number, what: string): StreamState | undefined {
    const entry = this.#channels.require(channel, "input", what);
    const stream = this.session.stream(entry.streamId);
    if (stream === undefined) throw new ProtocolError("invalid-channel", `${what} uses an unknown channel`);
    const terminal = stream.inputTerminal;
    if (terminal === undefined) return stream;
    if (terminal.kind === "cancelled" && terminal.by === "server") return undefined;
    throw new ProtocolError("invalid-channel", `${what} uses a channel whose input has ended`);
  }

  async #inputItem(message: InputStreamItem, permitBytes: number): Promise<boolean> {
    const stream = this.#inputStream(message.channel, "inputStreamItem");
    if (stream === undefined) return false;
    if (stream.elementKind !== "value") {
      throw new ProtocolError("protocol-error", "items of a direct-binary stream travel as binary messages", { retryable: true });
    }
    const decoded = decodeValue(message.value as unknown as JsonValue, stream.graph, "provisional", "value");
    const canonical = encodeUtf8(canonicalValue(decoded));
    if (await this.#isDuplicate(stream, message.sequence, 1n, canonical, undefined)) return false;
    const introduced = this.session.prepareStreams(
      decoded.streams,
      stream.graph,
      "input",
      { kind: "item", streamId: stream.streamId, sequence: message.sequence },
      "/value",
    );
    const tokens = new Map(introduced.map((p) => [p.state.provisionalRef ?? "", p.state.token]));
    const value = substituteStreamRefs(decoded.value as unknown as SchemaValueJson, tokens);
    const chunk: InputChunk = { streamId: stream.streamId, sequence: message.sequence, itemCount: 1n, data: canonical, mimeType: undefined };
    const accepted = await this.session.acceptInput(this, stream, chunk, { kind: "value", value }, introduced, permitBytes);
    if (accepted !== undefined) this.#ackWhenCommitted(stream, accepted, introduced.map((p) => p.state));
    return true;
  }

  async #inputBinary(message: ClientBinaryMessage, permitBytes: number): Promise<boolean> {
    const stream = this.#inputStream(message.channel, message.type);
    if (stream === undefined) return false;
    const expected = message.type === "input-u8" ? "u8" : "binary";
    if (stream.elementKind !== expected) {
      throw new ProtocolError("protocol-error", `${message.type} does not match the stream's element type`, { retryable: true });
    }
    let sequence = message.sequence;
    let payload = message.payload;
    const mimeType = message.type === "input-binary" ? message.mimeType : undefined;
    if (message.type === "input-binary") checkBinaryItem(stream.graph, payload.length, mimeType);
    const itemCount = message.type === "input-u8" ? BigInt(payload.length) : 1n;
    if (await this.#isDuplicate(stream, sequence, itemCount, payload, mimeType)) return false;
    if (message.type === "input-u8" && sequence < stream.count) {
      // A resend that overlaps the high-water: the overlap matched, keep the suffix.
      payload = payload.subarray(Number(stream.count - sequence));
      sequence = stream.count;
    }
    // A private copy: the payload is a view of the whole received message.
    const data = payload.slice();
    const item: InputItem = message.type === "input-u8" ? { kind: "bytes", bytes: data } : { kind: "blob", blob: mimeType === undefined ? { bytes: data } : { bytes: data, mimeType } };
    const chunk: InputChunk = { streamId: stream.streamId, sequence, itemCount: message.type === "input-u8" ? BigInt(data.length) : 1n, data, mimeType };
    const accepted = await this.session.acceptInput(this, stream, chunk, item, [], permitBytes);
    if (accepted !== undefined) this.#ackWhenCommitted(stream, accepted, []);
    return true;
  }

  /**
   * Resend handling (section 9): a range entirely below the high-water must
   * match what was accepted (then it is re-ACKed); a range starting above it
   * is a gap. A range straddling it must match on the overlap.
   */
  async #isDuplicate(stream: StreamState, sequence: bigint, itemCount: bigint, data: Uint8Array, mimeType: string | undefined): Promise<boolean> {
    const highWater = stream.count;
    if (sequence > highWater) throw new ProtocolError("input-gap", "input skips items that were never accepted");
    if (sequence === highWater) return false;
    // Compare with committed data only: wait for chunks still being committed.
    await stream.inputCommitted;
    const overlapEnd = sequence + itemCount < highWater ? sequence + itemCount : highWater;
    const stored = await this.session.deps.store.readInput(stream.streamId, sequence, overlapEnd);
    if (!sameInput(stored, sequence, overlapEnd, data, stream.elementKind === "u8", mimeType)) {
      throw new ProtocolError("input-conflict", "a resent input item differs from the accepted one");
    }
    if (sequence + itemCount > highWater) return false;
    await this.#send(this.#ack(stream, []));
    return true;
  }

  async #inputEnd(message: InputStreamEnd): Promise<void> {
    const stream = this.#inputStream(message.channel, "inputStreamEnd");
    if (stream === undefined) return;
    if (message.sequence < stream.count) throw new ProtocolError("input-conflict", "inputStreamEnd claims fewer items than were accepted");
    if (message.sequence > stream.count) throw new ProtocolError("input-gap", "inputStreamEnd claims items that were never accepted");
    await this.session.endInput(stream);
    this.#channels.close(stream.streamId);
    await this.#send(this.#ack(stream, []));
  }

  async #cancel(message: ClientStreamCancel): Promise<void> {
    const entry = this.#channels.get(message.channel);
    if (entry === undefined || entry.state === "reserved") {
      throw new ProtocolError("invalid-channel", "streamCancel uses an unknown channel");
    }
    const stream = this.session.stream(entry.streamId);
    if (stream === undefined) throw new ProtocolError("invalid-channel", "streamCancel uses an unknown channel");
    if (stream.terminal) {
      // A cancel that crossed the terminal in flight is accepted once and ignored.
      if (entry.lateCancelAccepted) throw new ProtocolError("invalid-channel", "the stream was already cancelled");
      entry.lateCancelAccepted = true;
      return;
    }
    if (stream.direction === "input") {
      await this.session.cancelInputByClient(stream, message.reason);
      this.#channels.close(stream.streamId);
      await this.#send(this.#ack(stream, []));
      return;
    }
    await this.session.cancelOutput(stream, message.reason);
  }

  /**
   * Acknowledges one accepted chunk once its commit is done. Commits resolve
   * in call order, so ACKs leave in order; `invocationFinished` waits for
   * ACKs still pending.
   */
  #ackWhenCommitted(stream: StreamState, accepted: { committed: Promise<void>; count: bigint }, introduced: readonly StreamState[]): void {
    const mappings = introduced.map((child) => this.#mapping(child, true));
    this.#handling++;
    accepted.committed
      .then(() => this.#groupAcks.add(stream, accepted.count, mappings, introduced))
      .catch((error: unknown) => this.#fault(error))
      .finally(() => {
        this.#handling--;
        this.#maybeFinish();
      });
  }

  /** One group ACK (see group-acks.ts). */
  #sendGroupAck(stream: StreamState, pending: GroupAck<StreamState>): void {
    // Nested channels become usable only with the ACK that announces them.
    for (const child of pending.introduced) this.#channels.announce(child.streamId);
    void this.#send({
      type: "inputStreamAck",
      channel: this.#channels.forStream(stream.streamId)?.channel ?? 0,
      highestContiguousSequence: pending.count,
      mappings: pending.mappings,
      terminal: false,
    }).catch((error: unknown) => this.#fault(error));
  }

  /** The stream's current ACK (a resend's, the terminal's), after any group ACK still pending. */
  #ack(stream: StreamState, introduced: readonly StreamState[]): ServerMessage {
    this.#groupAcks.flush(stream);
    const mappings = introduced.map((child) => this.#mapping(child, true));
    for (const child of introduced) this.#channels.announce(child.streamId);
    return {
      type: "inputStreamAck",
      channel: this.#channels.forStream(stream.streamId)?.channel ?? 0,
      highestContiguousSequence: stream.count,
      mappings,
      terminal: stream.inputTerminal !== undefined,
    };
  }

  // ------------------------------------------------------------ lifecycle

  async #send(message: ServerMessage): Promise<void> {
    if (this.#ended && message.type !== "invocationFinished") return;
    await this.#transport.send(message);
  }

  /** The transport closed or was replaced: stop sending, keep the session running. */
  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.session.detach(this);
    this.#onEnd(this);
  }

  transportClosed(): void {
    this.#end();
  }

  #fault(error: unknown): void {
    this.session.deps.logger.error("attachment failed", { session: this.session.sessionId, error: String(error) });
    if (this.#ended) return;
    this.#end();
    void Promise.resolve()
      .then(() =>
        this.#transport.send({ type: "invocationRejected", attemptId: this.attemptId, code: "internal-error", message: "internal error", retryable: true }),
      )
      .catch(() => undefined)
      .finally(() => this.#transport.close(CLOSE_INTERNAL_ERROR, ""));
  }
}

/**
 * The input side of one attachment: the client's stream messages after
 * acceptance (items, ends, cancels), resend handling (section 9), and the
 * ACKs, each sent only after the commit it reports (grouped per commit, see
 * group-acks.ts).
 *
 * Why one file: the item, end, cancel and resend paths share one table of the attachment's input
 * streams and one order of ACKs; the grouping of ACKs and the resend comparison already live
 * apart.
 */
import {
  ProtocolError,
  type ClientBinaryMessage,
  type ClientStreamCancel,
  type InputStreamEnd,
  type InputStreamItem,
  type JsonValue,
  type SchemaValueJson,
  type ServerCancelReason,
  type ServerMessage,
  type StreamMapping,
} from "@golem-stream/wire";
import type { AttachmentLink } from "./attachment-link.js";
import { GroupAcks, type GroupAck } from "./group-acks.js";
import { sameInput } from "../invocation/input-resend.js";
import {
  LISTENER_TOLD,
  type AcceptedInput,
  type AttachmentSink,
  type InputAcceptance,
  type InputCommitListener,
} from "../invocation/attachment-sink.js";
import type { DecodedValue } from "@golem-stream/schema-value";
import type { InputChunk } from "../store/session-store.js";
import type { InputItem, PendingStream, StreamState } from "../invocation/stream-state.js";
import { canonicalValueBytes, decodeValue, substituteStreamRefs } from "../values.js";
import { checkBinaryItem, checkU8Items } from "../direct-binary-items.js";

/** What an item that introduces no stream (most) carries: shared empty lists. */
const NO_STREAMS: readonly PendingStream[] = Object.freeze([]);
const NO_STATES: readonly StreamState[] = Object.freeze([]);
const NO_MAPPINGS: readonly StreamMapping[] = Object.freeze([]);

export type ClientStreamMessage = InputStreamItem | InputStreamEnd | ClientStreamCancel | ClientBinaryMessage;

export class AttachmentInput {
  /** An input commit of this attachment failed: no later commit of it is acknowledged (#commitFailedWith). */
  #commitFailed = false;
  readonly #link: AttachmentLink;
  /** The attachment, as the session's owner: input is accepted only from the current owner. */
  readonly #owner: AttachmentSink;
  /** Messages being handled and commits awaiting their ACK. */
  #handling = 0;
  readonly #groupAcks: GroupAcks<StreamState, StreamState>;
  /** Server cancels of nested inputs whose channel was still reserved: sent once the ACK announcing it is. */
  readonly #cancelsAwaitingAnnouncement = new Map<StreamState, ServerCancelReason>();
  /**
   * The ACK of an item that introduces no stream (nearly all): told by the session's one
   * reaction to the item's commit, which also releases its permits, instead of a reaction of
   * its own (a promise and two closures per item). The ACK is owed (`#handling`) from the
   * hand-over to the session until this hears of the commit.
   */
  readonly #commits: InputCommitListener = {
    committed: (stream, count, chunks) => {
      try {
        if (!this.#commitFailed) this.#groupAcks.add(stream, count, NO_MAPPINGS, NO_STATES);
      } catch (error) {
        this.#link.fault(error);
      }
      this.#ackSettled(chunks);
    },
    failed: (error, chunks) => {
      this.#commitFailedWith(error);
      this.#ackSettled(chunks);
    },
  };

  constructor(link: AttachmentLink, owner: AttachmentSink) {
    this.#link = link;
    this.#owner = owner;
    this.#groupAcks = new GroupAcks<StreamState, StreamState>(
      (stream, ack) => this.#sendGroupAck(stream, ack),
      () => link.maybeFinish(),
    );
  }

  /** Whether an ACK is still to be sent: `invocationFinished` waits for it. */
  get busy(): boolean {
    return this.#handling > 0 || this.#groupAcks.pending > 0;
  }

  /**
   * Handles one decoded client message after acceptance. `permitBytes` are
   * the session byte permits taken for the raw message; this call owns
   * them (they move to the input queue or are released).
   */
  handle(message: ClientStreamMessage, permitBytes: number): Promise<void> | undefined {
    // Another transport took the session over while this message waited (for its permits, say):
    // it acts on nothing any more, as its items are refused (session-input.ts). Its end or cancel
    // applied now would end an input the new owner was told is open. A closed one with no
    // successor still has its cancels applied (they were read before the close).
    const current = this.#link.session.attachment;
    if (current !== undefined && current !== this.#owner) {
      this.#link.session.permits.release(permitBytes);
      return undefined;
    }
    // The invocation fails here: its failure cancels every open input on this connection, so the
    // input still arriving is dropped as input crossing a server cancel is (a stream behind a
    // commit that failed would otherwise read as a gap). A client's cancel is still applied.
    if (this.#link.session.failing && message.type !== "streamCancel") {
      this.#link.session.permits.release(permitBytes);
      return undefined;
    }
    // invocationFinished waits for the ACK of a message being handled.
    this.#handling++;
    let outcome: boolean | Promise<boolean>;
    try {
      outcome = this.#dispatch(message, permitBytes);
    } catch (error) {
      this.#handled(false, permitBytes);
      throw error;
    }
    // An item that waited for nothing was handled here and now: no promise per item.
    if (typeof outcome === "boolean") {
      this.#handled(outcome, permitBytes);
      return undefined;
    }
    return outcome.then(
      (kept) => this.#handled(kept, permitBytes),
      (error: unknown) => {
        this.#handled(false, permitBytes);
        throw error;
      },
    );
  }

  /** Whether the message's permits were kept (moved to the input queue); a promise if it had to wait. */
  #dispatch(message: ClientStreamMessage, permitBytes: number): boolean | Promise<boolean> {
    switch (message.type) {
      case "inputStreamItem":
        return this.#inputItem(message, permitBytes);
      case "input-u8":
      case "input-binary":
        return this.#inputBinary(message, permitBytes);
      case "inputStreamEnd":
        return this.#inputEnd(message).then(() => false);
      case "streamCancel":
        return this.#cancel(message).then(() => false);
    }
  }

  #handled(kept: boolean, permitBytes: number): void {
    if (!kept) this.#link.session.permits.release(permitBytes);
    this.#handling--;
    this.#link.maybeFinish();
  }

  /** The server made an input terminal: the client gets `streamCancel`, then the terminal ACK. */
  cancelledByServer(stream: StreamState, reason: ServerCancelReason): void {
    const link = this.#link;
    const entry = link.channels.forStream(stream.streamId);
    if (entry === undefined) return;
    if (entry.state === "reserved") {
      // A nested input not announced yet (the ACK of the item that introduced it is still to
      // come): told right after that ACK, which would otherwise announce it open for good.
      this.#cancelsAwaitingAnnouncement.set(stream, reason);
      return;
    }
    // The sends are issued now, in order: the transport keeps call order,
    // so the terminal ACK cannot fall behind a later invocationFinished.
    this.#groupAcks.flush(stream);
    void link.send({ type: "streamCancel", channel: entry.channel, reason }).catch((error: unknown) => link.fault(error));
    void link.send(this.#ack(stream, [])).catch((error: unknown) => link.fault(error));
  }

  /**
   * The input stream on `channel`, or undefined when the server cancelled it
   * on this connection: the client may have any amount of input in flight
   * across that cancel (its unACKed window), so late data is ignored, not a
   * violation. Inputs already terminal at acceptance have a closed channel.
   */
  #inputStream(channel: number, what: string, sequence?: bigint, items = 1n): StreamState | undefined {
    const entry = this.#link.channels.require(channel, "input", what);
    const stream = this.#link.session.stream(entry.streamId);
    if (stream === undefined) throw new ProtocolError("invalid-channel", `${what} uses an unknown channel`);
    const terminal = stream.inputTerminal;
    if (terminal === undefined) return stream;
    if (terminal.kind === "cancelled" && terminal.by === "server") return undefined;
    // A resend of what the input already holds, after its end became known here since this
    // attachment's acceptance (the end read on the client's previous connection was still being
    // recorded when this one was accepted): an identical duplicate, idempotent (section 9).
    if (terminal.kind === "end" && sequence !== undefined && sequence + items <= stream.count) return stream;
    throw new ProtocolError("invalid-channel", `${what} uses a channel whose input has ended`);
  }

  #inputItem(message: InputStreamItem, permitBytes: number): boolean | Promise<boolean> {
    const stream = this.#inputStream(message.channel, "inputStreamItem", message.sequence);
    if (stream === undefined) return false;
    if (stream.elementKind !== "value") {
      throw new ProtocolError("protocol-error", "items of a direct-binary stream travel as binary messages", { retryable: true });
    }
    const decoded = decodeValue(message.value as unknown as JsonValue, stream.graph, "provisional", "value");
    const canonical = canonicalValueBytes(decoded);
    // The next item in order (the common case) is no resend: no need to wait for #isDuplicate.
    if (message.sequence === stream.count) return this.#acceptItem(stream, message, decoded, canonical, permitBytes);
    return this.#isDuplicate(stream, message.sequence, 1n, canonical, undefined).then((duplicate) =>
      duplicate ? false : this.#acceptItem(stream, message, decoded, canonical, permitBytes),
    );
  }

  #acceptItem(
    stream: StreamState,
    message: InputStreamItem,
    decoded: DecodedValue,
    canonical: Uint8Array,
    permitBytes: number,
  ): boolean | Promise<boolean> {
    const session = this.#link.session;
    // Most items introduce no stream: no parent to describe, no lists to make (here and below).
    const introduced =
      decoded.streams.length === 0
        ? NO_STREAMS
        : session.prepareStreams(
            decoded.streams,
            stream.graph,
            "input",
            { kind: "item", streamId: stream.streamId, sequence: message.sequence },
            "/value",
          );
    // The decoded value is the server's own copy; it needs rewriting only when it introduces streams.
    const value =
      introduced.length === 0
        ? (decoded.value as unknown as SchemaValueJson)
        : substituteStreamRefs(
            decoded.value as unknown as SchemaValueJson,
            new Map(introduced.map((p) => [p.state.provisionalRef ?? "", p.state.token])),
          );
    const chunk: InputChunk = {
      streamId: stream.streamId,
      sequence: message.sequence,
      itemCount: 1n,
      data: canonical,
      mimeType: undefined,
    };
    if (introduced.length === 0) return this.#acceptPlainItem(stream, chunk, value, permitBytes);
    const accepted = session.acceptInput(this.#owner, stream, chunk, { kind: "value", value }, introduced, permitBytes);
    const states = introduced.length === 0 ? NO_STATES : introduced.map((p) => p.state);
    if (accepted instanceof Promise) return accepted.then((a) => this.#itemAccepted(stream, a, states));
    return this.#itemAccepted(stream, accepted, states);
  }

  /** An item that introduces no stream: `#commits` sends its ACK after the commit. */
  #acceptPlainItem(stream: StreamState, chunk: InputChunk, value: SchemaValueJson, permitBytes: number): boolean | Promise<boolean> {
    this.#handling++;
    let accepted: InputAcceptance | Promise<InputAcceptance>;
    try {
      accepted = this.#link.session.acceptInput(
        this.#owner,
        stream,
        chunk,
        { kind: "value", value },
        NO_STREAMS,
        permitBytes,
        this.#commits,
      );
    } catch (error) {
      this.#handling--;
      throw error;
    }
    if (accepted instanceof Promise) {
      return accepted.then(
        (late) => this.#plainAccepted(late),
        (error: unknown) => {
          this.#handling--;
          throw error;
        },
      );
    }
    return this.#plainAccepted(accepted);
  }

  /** Not accepted (the stream ended, or the attachment was replaced, meanwhile): no ACK is owed. */
  #plainAccepted(accepted: InputAcceptance): true {
    if (accepted === undefined) this.#handling--;
    return true;
  }

  #ackSettled(chunks: number): void {
    this.#handling -= chunks;
    this.#link.maybeFinish();
  }

  #itemAccepted(stream: StreamState, accepted: InputAcceptance, introduced: readonly StreamState[]): true {
    if (accepted !== undefined) this.#ackWhenCommitted(stream, withPromise(accepted), introduced);
    return true;
  }

  async #inputBinary(message: ClientBinaryMessage, permitBytes: number): Promise<boolean> {
    const itemCount = message.type === "input-u8" ? BigInt(message.payload.length) : 1n;
    const stream = this.#inputStream(message.channel, message.type, message.sequence, itemCount);
    if (stream === undefined) return false;
    const expected = message.type === "input-u8" ? "u8" : "binary";
    if (stream.elementKind !== expected) {
      throw new ProtocolError("protocol-error", `${message.type} does not match the stream's element type`, { retryable: true });
    }
    let sequence = message.sequence;
    let payload = message.payload;
    const mimeType = message.type === "input-binary" ? message.mimeType : undefined;
    if (message.type === "input-binary") checkBinaryItem(stream.graph, payload.length, mimeType);
    else checkU8Items(stream.graph, payload);
    if (sequence !== stream.count && (await this.#isDuplicate(stream, sequence, itemCount, payload, mimeType))) return false;
    if (message.type === "input-u8" && sequence < stream.count) {
      // A resend that overlaps the high-water: the overlap matched, keep the suffix.
      payload = payload.subarray(Number(stream.count - sequence));
      sequence = stream.count;
    }
    const data = ownedPayload(payload);
    const item: InputItem =
      message.type === "input-u8"
        ? { kind: "bytes", bytes: data }
        : { kind: "blob", blob: mimeType === undefined ? { bytes: data } : { bytes: data, mimeType } };
    const chunk: InputChunk = {
      streamId: stream.streamId,
      sequence,
      itemCount: message.type === "input-u8" ? BigInt(data.length) : 1n,
      data,
      mimeType,
    };
    const accepted = await this.#link.session.acceptInput(this.#owner, stream, chunk, item, [], permitBytes);
    if (accepted !== undefined) this.#ackWhenCommitted(stream, withPromise(accepted), []);
    return true;
  }

  /**
   * Resend handling (section 9): a range entirely below the high-water must
   * match what was accepted (then it is re-ACKed); a range starting above it
   * is a gap. A range straddling it must match on the overlap.
   */
  async #isDuplicate(
    stream: StreamState,
    sequence: bigint,
    itemCount: bigint,
    data: Uint8Array,
    mimeType: string | undefined,
  ): Promise<boolean> {
    const highWater = stream.count;
    if (sequence > highWater) throw new ProtocolError("input-gap", "input skips items that were never accepted");
    if (sequence === highWater) return false;
    // Compare with committed data only: wait for chunks still being committed.
    await stream.inputCommitted;
    const overlapEnd = sequence + itemCount < highWater ? sequence + itemCount : highWater;
    const stored = await this.#link.session.deps.store.readInput(stream.streamId, sequence, overlapEnd);
    if (!sameInput(stored, sequence, overlapEnd, data, stream.elementKind === "u8", mimeType)) {
      throw new ProtocolError("input-conflict", "a resent input item differs from the accepted one");
    }
    if (sequence + itemCount > highWater) return false;
    // An end being recorded (another attachment's, see #inputStream): the ACK tells the terminal
    // only once it is durable.
    await stream.inputTerminalWrite;
    await this.#link.send(this.#ack(stream, []));
    return true;
  }

  async #inputEnd(message: InputStreamEnd): Promise<void> {
    const before = this.#inputStream(message.channel, "inputStreamEnd", message.sequence, 0n);
    if (before === undefined) return;
    // In a cluster the end waits for the stream's items to commit: an item the store refused is
    // still being checked against it (cluster-follower.ts, `checkedCommit`), which may move the
    // count. On one node the store records the end after the items handed to it before (its
    // mutations take effect in call order, session-store.ts): in the same group commit while
    // they still wait for theirs, one sync instead of two before the terminal ACK.
    if (before.inputTerminal === undefined && this.#link.session.clustered) await before.inputCommitted;
    for (;;) {
      const stream = this.#inputStream(message.channel, "inputStreamEnd", message.sequence, 0n);
      if (stream === undefined) return;
      if (stream.inputTerminal === undefined) return this.#endNow(stream, message.sequence);
      // Ended by another attachment's message (see #inputStream): the same end again is re-ACKed
      // once that end is durable. Had its write failed, the input has not ended: this end is the one.
      if (message.sequence !== stream.count)
        throw new ProtocolError("input-conflict", "inputStreamEnd differs from the input's recorded end");
      await stream.inputTerminalWrite;
      await stream.inputCommitted;
      if (stream.inputTerminal === undefined) continue;
      this.#link.channels.close(stream.streamId);
      await this.#link.send(this.#ack(stream, []));
      return;
    }
  }

  /** Records the end of an input that has not ended, then its terminal ACK. */
  async #endNow(stream: StreamState, sequence: bigint): Promise<void> {
    if (sequence < stream.count) throw new ProtocolError("input-conflict", "inputStreamEnd claims fewer items than were accepted");
    if (sequence > stream.count) throw new ProtocolError("input-gap", "inputStreamEnd claims items that were never accepted");
    try {
      await this.#link.session.endInput(stream);
    } catch (error) {
      // The store refuses an end behind an item whose commit failed (it would end the input
      // short): that failure tells the client, as the invocation's (the input's cancel and its
      // terminal ACK) or as this attachment's fault.
      await stream.inputCommitted;
      if (this.#commitFailed) return;
      throw error;
    }
    // Settled by now (committed before the end); the ACK says every item is durable, so it never
    // goes before them.
    await stream.inputCommitted;
    this.#link.channels.close(stream.streamId);
    await this.#link.send(this.#ack(stream, []));
  }

  async #cancel(message: ClientStreamCancel): Promise<void> {
    const link = this.#link;
    const entry = link.channels.get(message.channel);
    if (entry === undefined || entry.state === "reserved") {
      throw new ProtocolError("invalid-channel", "streamCancel uses an unknown channel");
    }
    const stream = link.session.stream(entry.streamId);
    if (stream === undefined) throw new ProtocolError("invalid-channel", "streamCancel uses an unknown channel");
    if (entry.state === "open" && (await this.#cancelledBefore(stream))) {
      // The client's own cancel, sent on its connection before and recorded since this attachment's
      // acceptance (as an input's end, see #inputStream): the same cancel again, ACKed once durable.
      link.channels.close(stream.streamId);
      await link.send(this.#ack(stream, []));
      return;
    }
    if (stream.terminal) {
      // A cancel that crossed the terminal in flight is accepted once and ignored.
      if (entry.lateCancelAccepted) throw new ProtocolError("invalid-channel", "the stream was already cancelled");
      entry.lateCancelAccepted = true;
      return;
    }
    if (stream.direction === "input") {
      await link.session.cancelInputByClient(stream, message.reason);
      link.channels.close(stream.streamId);
      await link.send(this.#ack(stream, []));
      return;
    }
    await link.session.cancelOutput(stream, message.reason);
  }

  /** Whether `stream` is an input the client cancelled on another attachment, once that cancel's write has settled (a failed one leaves it open). */
  async #cancelledBefore(stream: StreamState): Promise<boolean> {
    const terminal = stream.inputTerminal;
    if (stream.direction !== "input" || terminal?.kind !== "cancelled" || terminal.by !== "client") return false;
    await stream.inputTerminalWrite;
    return stream.inputTerminal !== undefined;
  }

  /**
   * Acknowledges one accepted chunk once its commit is done. Commits resolve
   * in call order, so ACKs leave in order; `invocationFinished` waits for
   * ACKs still pending.
   */
  #ackWhenCommitted(stream: StreamState, accepted: AcceptedInput, introduced: readonly StreamState[]): void {
    const link = this.#link;
    const mappings = introduced.length === 0 ? NO_MAPPINGS : introduced.map((child) => link.mapping(child, true));
    this.#handling++;
    // One reaction per commit (a then/catch/finally chain was three promises per item).
    accepted.committed.then(
      () => {
        try {
          if (!this.#commitFailed) this.#groupAcks.add(stream, accepted.count, mappings, introduced);
        } catch (error) {
          link.fault(error);
        }
        this.#handling--;
        link.maybeFinish();
      },
      (error: unknown) => {
        this.#commitFailedWith(error);
        this.#handling--;
        link.maybeFinish();
      },
    );
  }

  /**
   * An input commit failed. Where the invocation runs it fails for it (the session was told
   * first): its failure cancels this input and finishes the invocation on this very connection,
   * which stays open to carry them, as a fatal failure must (protocol section 11). Elsewhere (a
   * node that only serves the attachment, a position conflict the session survives) the
   * attachment ends and the client resumes.
   */
  #commitFailedWith(error: unknown): void {
    // Nothing after a commit that failed is acknowledged: a store that refused one chunk may
    // still report a later one (or a double of one may), and its ACK would claim input the log
    // does not hold contiguously. The input's cancel and terminal ACK say where it ends.
    this.#commitFailed = true;
    if (!this.#link.session.failing) this.#link.fault(error);
  }

  /** One group ACK (see group-acks.ts). */
  #sendGroupAck(stream: StreamState, pending: GroupAck<StreamState>): void {
    const link = this.#link;
    // Nested channels become usable only with the ACK that announces them.
    for (const child of pending.introduced) link.channels.announce(child.streamId);
    void link
      .send({
        type: "inputStreamAck",
        channel: link.channels.forStream(stream.streamId)?.channel ?? 0,
        highestContiguousSequence: pending.count,
        mappings: pending.mappings,
        terminal: false,
      })
      .catch((error: unknown) => link.fault(error));
    // Announced now: a server cancel recorded while they were not yet is sent after the ACK.
    if (this.#cancelsAwaitingAnnouncement.size === 0) return;
    for (const child of pending.introduced) {
      const reason = this.#cancelsAwaitingAnnouncement.get(child);
      if (reason === undefined) continue;
      this.#cancelsAwaitingAnnouncement.delete(child);
      this.cancelledByServer(child, reason);
    }
  }

  /** The stream's current ACK (a resend's, the terminal's), after any group ACK still pending. */
  #ack(stream: StreamState, introduced: readonly StreamState[]): ServerMessage {
    const link = this.#link;
    this.#groupAcks.flush(stream);
    const mappings = introduced.map((child) => link.mapping(child, true));
    for (const child of introduced) link.channels.announce(child.streamId);
    return {
      type: "inputStreamAck",
      channel: link.channels.forStream(stream.streamId)?.channel ?? 0,
      highestContiguousSequence: stream.count,
      mappings,
      terminal: stream.inputTerminal !== undefined,
    };
  }
}

/**
 * The payload as the item keeps it. It is a view of the received message,
 * which nothing else writes to once `ws` has delivered it. A view that covers
 * most of its buffer is kept as it is (a 1 MiB batch is not copied again); a
 * small view is copied, so that it does not keep a larger buffer alive.
 */
function ownedPayload(payload: Uint8Array): Uint8Array {
  return payload.byteLength * 2 >= payload.buffer.byteLength ? payload : payload.slice();
}

/** A chunk accepted without a listener always comes with the promise of its commit: only `#commits` is told instead. */
function withPromise(accepted: AcceptedInput | typeof LISTENER_TOLD): AcceptedInput {
  if (accepted === LISTENER_TOLD) throw new Error("an input commit told only to its listener has no promise to acknowledge");
  return accepted;
}

/**
 * The cluster half of a live session (docs/cluster.md): keeps this node's
 * copy of a session in step with what other nodes commit to the shared
 * store, and carries what this node does for them. The session it serves
 * (live-session.ts) stays the single-node session; it holds one of these in
 * cluster mode only and reaches the other nodes through it.
 *
 * A node is the session's `owner` (it runs the invocation) or a `mirror`
 * (another node runs it; this one serves an attachment to it). The writer of
 * each fact is its authority: the owner commits output, the result and the
 * finish; the attachment's node commits input. The node-to-node messages
 * travel through `ClusterPeer` (cluster/cluster-peer.ts).
 */
import type { ClientCancelReason } from "@golem-stream/wire";
import { feedInput } from "./input-feed.js";
import { ClusterPeer } from "../cluster/cluster-peer.js";
import { sameInput } from "./input-resend.js";
import type { ClusterSessionStore } from "../store/cluster-store.js";
import { isOwnershipLost } from "../store/ownership.js";
import type { InputChunk, NewStream, SessionRecord, StreamRecord } from "../store/session-store.js";
import type { SessionDeps } from "./session-deps.js";
import type { AttachmentSink } from "./attachment-sink.js";
import type { StreamState } from "./stream-state.js";

/**
 * An input chunk the store refused because the stream's committed
 * high-water is elsewhere than this node believed (the client's previous
 * attachment, at another node, committed input this node did not know of
 * yet). Not the invocation's failure: the attachment ends with a retryable
 * error and the client resumes from the committed high-water.
 */
export class InputPositionConflict extends Error {}

/** What the follower needs from its session. */
export interface FollowedSession {
  readonly deps: SessionDeps;
  readonly sessionId: string;
  /** The session's record as this node knows it. */
  record(): SessionRecord;
  /** A sync replaces it with (or updates it from) the store's. */
  replaceRecord(record: SessionRecord): void;
  /** Whether this node is recording an outcome of its own. */
  finishing(): boolean;
  stream(streamId: string): StreamState | undefined;
  /** The streams item `sequence` of stream `streamId` introduced. */
  childrenOf(streamId: string, sequence: bigint): readonly StreamState[];
  /** Registers a stream another node created (an input gets its agent queue if the invocation runs here). */
  registerStored(stored: StreamRecord): StreamState;
  /** The local attachment, if any. */
  attachment(): AttachmentSink | undefined;
  /** Revokes the local attachment: it no longer owns the session. */
  revoke(sink: AttachmentSink): void;
  /** Owner: another node serves an attachment to the session (the detached wait starts over). */
  attachmentElsewhere(): void;
  cancelOutput(stream: StreamState, reason: ClientCancelReason): Promise<void>;
  delivered(stream: StreamState, bytes: number): void;
  /** Owner: `delivered` changes from another node's attachment may have been lost. */
  remoteDeliveryLost(): void;
  /** Charges input handed to the agent to the session's byte permits. */
  charge(bytes: number): void;
  /** Stops the invocation here at once, recording nothing more (`why` is the abort's message). */
  stopInvocation(why: string): void;
  /** A failure the invocation cannot go on after. */
  fail(error: unknown): void;
}

/** The item an agent reads for a stored input chunk (what `acceptInput` handed over at the node that accepted it). */
export class ClusterFollower {
  readonly #session: FollowedSession;
  /** Whether this node runs the invocation (`owner`) or only serves attachments to it while another node runs it (`mirror`). */
  role: "owner" | "mirror" = "owner";
  /** The node-to-node side, while the session is loaded (what goes through it is undefined without it, as awaiting nothing). */
  #peer: ClusterPeer | undefined;
  /** The last refresh from the store asked for (`syncFromStore`): the next one starts after it. */
  #syncs: Promise<void> = Promise.resolve();

  constructor(session: FollowedSession) {
    this.#session = session;
  }

  /** A mirror of a running session: another node runs it, this one serves its attachment. */
  get remote(): boolean {
    return this.#peer !== undefined && this.role === "mirror" && this.#session.record().state !== "finished";
  }

  /** Starts following the session's changes on other nodes. */
  follow(store: ClusterSessionStore): void {
    const session = this.#session;
    this.#peer ??= new ClusterPeer(store, {
      sessionId: session.sessionId,
      logger: session.deps.logger,
      syncFromStore: () => this.syncFromStore(),
      attachedElsewhere: (generation, attachment) => this.#attachedElsewhere(generation, attachment),
      cancelOutputById: async (streamId, reason) => {
        const stream = session.stream(streamId);
        if (stream !== undefined && this.role === "owner" && session.record().state !== "finished")
          await session.cancelOutput(stream, reason);
      },
      deliveredRemotely: (streamId, events, bytes) => {
        const stream = session.stream(streamId);
        if (stream === undefined || this.role !== "owner") return;
        for (let i = 0; i < events; i++) session.delivered(stream, i === 0 ? bytes : 0);
      },
      attachedRemotely: () => session.attachmentElsewhere(),
      deliveryLost: () => {
        if (this.role === "owner") session.remoteDeliveryLost();
      },
    });
  }

  /** Stops following (the session leaves memory). */
  unfollow(): void {
    this.#peer?.close();
    this.#peer = undefined;
  }

  /** Announces an exact replay's attachment as the generation's sole owner to the other nodes. */
  claimAttachment(sink: AttachmentSink): Promise<void> | undefined {
    return this.#peer?.claimAttachment(sink.generation, sink.attachmentId);
  }

  /** Serving node: tells the owner that an attachment is still served here. */
  attachmentAlive(): void {
    this.#peer?.attachmentAlive();
  }

  // ------------------------------------------------------------ serving node (mirror)

  /** The local attachment sent an output event: the owner's window hears of it. */
  delivered(stream: StreamState, bytes: number): void {
    this.#peer?.delivered(stream.streamId, bytes);
  }

  /** A client's cancel of an output goes to the owner, which records the terminal; it reaches this attachment like any output. */
  forwardCancel(stream: StreamState, reason: ClientCancelReason): Promise<void> | undefined {
    return this.#peer?.forwardCancel(stream.streamId, reason);
  }

  /** Waits until the owner's agent has taken enough of the stream's input for one more chunk (cluster-peer.ts). */
  waitForInputRoom(stream: StreamState): Promise<void> | undefined {
    return this.#peer?.waitForInputRoom(stream.streamId);
  }

  /** A chunk accepted here went to the store for the owner to take. */
  inputHandedOver(stream: StreamState, bytes: number): void {
    if (this.remote) this.#peer?.inputHandedOver(stream.streamId, stream.count, bytes);
  }

  /** Whether a failed input commit leaves the invocation alone: a position conflict only ends the attachment (the client resumes); a mirror never fails the invocation it does not run. */
  sparesInvocation(error: unknown): boolean {
    return error instanceof InputPositionConflict || this.remote;
  }

  // ------------------------------------------------------------ input commits

  /**
   * The commit of an accepted chunk, as the attachment may count it. The
   * client's previous attachment may have been at another node, whose
   * commits of the same items can land after this node read the stream's
   * high-water (its connection was cut with commits in flight): the store
   * then refuses the chunk. If the store holds the chunk's whole range with
   * the same items (a resend is identical, section 9), the chunk is durable:
   * the commit counts as done. Otherwise the high-water here is wrong: it is
   * moved back to the store's and the chunk fails with a position conflict
   * (the attachment ends, the client resumes from the committed high-water).
   */
  checkedCommit(stream: StreamState, chunk: InputChunk, introduced: readonly NewStream[], committed: Promise<void>): Promise<void> {
    // A refused chunk is checked against the store (reads), so it settles after later chunks that
    // the store took at once. ACKs are cumulative and leave as commits settle: each chunk settles
    // only after the one before it, or a later ACK would go out first and the next would go back.
    const previous = stream.inputCommitted;
    const checked = committed.catch((error: unknown) => this.#refusedInput(stream, chunk, introduced, error));
    checked.catch(() => undefined); // handled below, once `previous` settles
    return previous.then(() => checked);
  }

  /** After the store refused the chunk: durable if the store holds the same items, else a position conflict. */
  async #refusedInput(stream: StreamState, chunk: InputChunk, introduced: readonly NewStream[], error: unknown): Promise<void> {
    // Refused for this node's stale ownership epoch: it owns the session no more (live-session.ts).
    if (isOwnershipLost(error)) throw error;
    const store = this.#session.deps.store;
    const stored = await store.getStream(stream.streamId);
    if (stored === undefined) throw error;
    const end = chunk.sequence + chunk.itemCount;
    // Streams an item introduces get new ids at each node: only an item without any can be the same.
    // Checked before the terminal: the other node may also have recorded the input's end since.
    if (stored.count >= end && introduced.length === 0) {
      const held = await store.readInput(stream.streamId, chunk.sequence, end);
      if (sameInput(held, chunk.sequence, end, chunk.data, stream.elementKind === "u8", chunk.mimeType)) return;
    }
    // Not durable: the high-water here goes back to the store's, so nothing (an ACK, the input's
    // end) counts the chunk as accepted.
    if (stored.count < stream.count) stream.count = stored.count;
    // The high-water is where the chunk starts and the input is open: the refusal was not about its position.
    if (stored.count === chunk.sequence && stored.inputTerminal === undefined) throw error;
    const why =
      stored.inputTerminal !== undefined ? `the input already ended at ${stored.count}` : `its committed high-water is ${stored.count}`;
    throw new InputPositionConflict(`input chunk at ${chunk.sequence} does not continue the stream: ${why}`, { cause: error });
  }

  /**
   * Before the natural end of an input is recorded at `stream.count`: an
   * item accepted here may have failed to commit (the store refused it), so
   * the end may be recorded only where the committed items end, or a stream
   * would end short of what the client sent. Counts only grow, so a check
   * that passes stays true until the end is recorded.
   */
  async checkEnd(stream: StreamState): Promise<void> {
    const stored = await this.#session.deps.store.getStream(stream.streamId);
    if (stored !== undefined && stored.inputTerminal === undefined && stored.count !== stream.count) {
      if (stored.count < stream.count) stream.count = stored.count;
      throw new InputPositionConflict(`the input's end at ${stream.count} is not where its committed items end (${stored.count})`);
    }
  }

  // ------------------------------------------------------------ following the store

  /**
   * Re-reads the session from the store after another node committed to it
   * (cluster/cluster-peer.ts) and acts on what changed. The writer of each
   * fact is its authority: a mirror takes outputs, the result and the finish
   * from the store; everyone takes input counts and terminals that are ahead
   * of its own. New streams are registered before any value naming them is
   * handed on. The owner feeds input another node committed to the agent.
   */
  syncFromStore(): Promise<void> {
    // One at a time, each reading the store after the one before it acted: an earlier read acted on
    // after a later one would take counts back, and a role change (a claim turns a mirror owner)
    // waits for the refresh in flight instead of that refresh skipping what a mirror takes.
    const sync = this.#syncs.then(() => this.#sync());
    this.#syncs = sync.catch(() => undefined);
    return sync;
  }

  async #sync(): Promise<void> {
    const session = this.#session;
    const [record, streams] = await Promise.all([
      session.deps.store.getSession(session.sessionId),
      session.deps.store.listStreams(session.sessionId),
    ]);
    if (record === undefined) return;
    if (this.role === "owner" && record.state === "finished" && session.record().state !== "finished" && !session.finishing())
      this.#finishedElsewhere();
    const mirror = this.role === "mirror";
    const outputs: StreamState[] = [];
    const cancelledByServer: StreamState[] = [];
    const fed: StreamState[] = [];
    for (const stored of streams) {
      let stream = session.stream(stored.streamId);
      if (stream === undefined) {
        stream = session.registerStored(stored);
        // Created at another node: the agent here has had none of its items.
        if (stream.direction === "input") stream.fed = 0n;
      }
      if (stream.direction === "output") {
        if (mirror && (stored.count !== stream.count || stored.outputTerminal !== stream.outputTerminal)) {
          stream.count = stored.count;
          // Read from the store: committed (a terminal this node records after a claim continues it).
          stream.outputCommitted = stored.count;
          stream.outputTerminal = stored.outputTerminal;
          outputs.push(stream);
        }
        continue;
      }
      if (stored.count > stream.count) stream.count = stored.count;
      if (stream.inputTerminal === undefined && stored.inputTerminal !== undefined) {
        stream.inputTerminal = stored.inputTerminal;
        if (stored.inputTerminal.kind === "cancelled" && stored.inputTerminal.by === "server") cancelledByServer.push(stream);
      }
      if (!mirror && stream.queue !== undefined) fed.push(stream);
    }
    const known = session.record();
    const hadResult = known.result !== undefined;
    const wasFinished = known.state === "finished";
    session.replaceRecord(mirror ? record : { ...known, generation: record.generation, sessionToken: record.sessionToken });
    for (const stream of fed) this.feed(stream);
    const sink = session.attachment();
    if (sink === undefined) return;
    for (const stream of outputs) sink.outputAppended(stream);
    for (const stream of cancelledByServer) {
      const terminal = stream.inputTerminal;
      if (terminal?.kind === "cancelled") sink.inputCancelledByServer(stream, terminal.reason);
    }
    const now = session.record();
    if (!hadResult && now.result !== undefined) sink.resultCommitted();
    if (!wasFinished && now.state === "finished") sink.finished();
  }

  /**
   * The store says another node finished this session while this node
   * still runs it: this node's lease lapsed while it was alive (a stall
   * longer than the TTL), and the node that claimed the session failed it.
   * The agent here stops at once and records nothing more (the store would
   * refuse it anyway); from now on this node follows the store as a mirror,
   * so a client attached here gets the outcome the store holds.
   */
  #finishedElsewhere(): void {
    const session = this.#session;
    session.deps.logger.warn("session finished by another node (this node's lease had lapsed): its invocation stops here", {
      event: "session.finished-elsewhere",
      session: session.sessionId,
    });
    this.role = "mirror";
    session.stopInvocation("the session was finished by another node");
  }

  /**
   * A resume, takeover or exact replay was committed at another node (or
   * here): the local attachment is revoked unless it serves that generation
   * and, for a replay, is the attachment named.
   */
  async #attachedElsewhere(generation: bigint, attachment: string | undefined): Promise<void> {
    await this.syncFromStore();
    const sink = this.#session.attachment();
    if (sink === undefined) return this.#session.attachmentElsewhere();
    if (sink.generation < generation || (attachment !== undefined && sink.attachmentId !== attachment)) this.#session.revoke(sink);
  }

  // ------------------------------------------------------------ owner: input committed elsewhere

  /** Owner: hands input that another node committed to the agent, as its queue makes room (a failure fails the invocation). */
  feed(stream: StreamState): void {
    const session = this.#session;
    void feedInput(stream, {
      store: session.deps.store,
      charge: (bytes) => session.charge(bytes),
      consumed: (fed) => this.#peer?.consumed(stream.streamId, fed),
      childrenOf: (streamId, sequence) => session.childrenOf(streamId, sequence),
    }).catch((error: unknown) => session.fail(error));
  }
}

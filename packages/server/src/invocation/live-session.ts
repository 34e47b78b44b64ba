/**
 * The invocation folder owns running a method on one durable session: its
 * streams and their state, input queues and feeds, output producers and
 * replays, the journal of a replayable run, byte permits and the node's byte
 * budget, the outcome. It knows no socket, and commits to the store before
 * anyone is told.
 *
 * `LiveSession` is one durable session loaded in memory, and the folder's
 * entry: the rest of the server uses it alone. It holds what its parts
 * share (the record, the ownership epoch, whether the method runs here) and
 * hands each part what it may read and do:
 *
 * - stream-registry.ts: the session's streams, and how new ones come to be;
 * - session-input.ts: the client's input, from the attachment to the agent;
 * - output-producers.ts, output-items.ts, output-windows.ts: the agent's output, to the store;
 * - method-run.ts: one run of the method, its result, a re-run;
 * - outcome-recorder.ts, failure-outcome.ts: how the invocation ends;
 * - attachment-slot.ts: the one attachment that owns it, the wait without one;
 * - cluster-follower.ts: in a cluster, what the other nodes do.
 *
 * Order of every change: validate, register in memory, commit to the store,
 * then notify the attachment. The attachment only sends what it reads back
 * from the store, so nothing reaches a client before it is durable.
 * Transports come and go; the session does not notice beyond `attach` and
 * `detach` (transport loss only detaches, section 8).
 *
 * Why one file: what is left here is the session's public surface (what
 * admission/, sessions/ and attachment/ call) and the wiring of the parts
 * above around the state they share; every job with rules of its own lives
 * in its own file, and splitting the wiring would only scatter that state.
 */
import type { ClientCancelReason, InvocationOutcome, ServerCancelReason } from "@golem-stream/wire";
import type { StreamLeaf } from "@golem-stream/schema-value";
import type { MethodDescriptor } from "../agent-host.js";
import type { Principal } from "../options.js";
import { sessionFields } from "../observability/log-observer.js";
import { identityOf } from "../observability/server-observer.js";
import type { ClusterSessionStore } from "../store/cluster-store.js";
import { FIRST_EPOCH } from "../store/ownership.js";
import type { InputChunk, SessionRecord, StreamParent, StreamRecord } from "../store/session-store.js";
import type { SchemaGraph } from "../values.js";
import type { AttachmentSink, InputAcceptance, InputCommitListener } from "./attachment-sink.js";
import { AttachmentSlot } from "./attachment-slot.js";
import { BytePermits } from "./byte-permits.js";
import { ClusterFollower } from "./cluster-follower.js";
import type { InvocationInput } from "./invocation-context.js";
import { MethodRun, type RunOptions } from "./method-run.js";
import { OutcomeRecorder } from "./outcome-recorder.js";
import { OutputProducers } from "./output-producers.js";
import { chargeUnsent, releaseSent, restartWindows } from "./output-windows.js";
import type { SessionDeps } from "./session-deps.js";
import { SessionInput } from "./session-input.js";
import { StreamRegistry } from "./stream-registry.js";
import type { InputItem, PendingStream, StreamState } from "./stream-state.js";

export class LiveSession {
  readonly deps: SessionDeps;
  record: SessionRecord;
  readonly owner: Principal;
  readonly permits: BytePermits;
  readonly #producers: OutputProducers;
  /** The session's streams (stream-registry.ts). */
  readonly #streams: StreamRegistry;
  /** The attachment that owns the session, and the wait without one (attachment-slot.ts). */
  readonly #attachment: AttachmentSlot;
  readonly #invocationAbort = new AbortController();
  #running = false;
  /** How the invocation ends, recorded once (outcome-recorder.ts). */
  readonly #outcome: OutcomeRecorder;
  /** Cluster mode only (`deps.cluster`): following the other nodes (cluster-follower.ts). */
  readonly #cluster: ClusterFollower | undefined;
  /** The input side: queues, accepted chunks, feeds, terminals (session-input.ts). */
  readonly #input: SessionInput;
  /** The run of the method, while this node runs it (method-run.ts). */
  readonly #method: MethodRun;
  /**
   * The ownership epoch this node holds (store/ownership.ts): `FIRST_EPOCH` for a session it
   * created, the claimed one after a claim or a restart. Its writes as the owner carry it.
   */
  ownerEpoch = FIRST_EPOCH;
  /** The store refused a write of this node for a stale epoch (see `#lostOwnership`). */
  #ownershipLost = false;

  constructor(deps: SessionDeps, record: SessionRecord, streams: readonly StreamState[]) {
    this.deps = deps;
    this.record = record;
    this.owner = { account: record.account, principal: record.principal };
    this.permits = new BytePermits(deps.limits.maxQueuedBytesPerSession, deps.nodeBudget);
    this.#producers = new OutputProducers({
      deps,
      invocationSignal: this.#invocationAbort.signal,
      prepareStreams: (...args) => this.prepareStreams(...args),
      adopt: (pending) => this.adopt(pending),
      outputAppended: (stream, committed) => this.#attachment.current?.outputAppended(stream, committed),
      recorded: (stream, bytes) => this.recorded(stream, bytes),
      fail: (error) => void this.#outcome.fail(error),
      chargeStored: (bytes) => deps.storedBytes.charge(this.owner, bytes),
      writeEpoch: () => this.ownerEpoch,
      sessionLogFields: () => sessionFields(this.record),
    });
    this.#streams = new StreamRegistry(
      { deps, owner: this.owner, sessionId: record.sessionId, record: () => this.record, replaying: () => this.#method.replaying },
      streams,
    );
    this.#outcome = new OutcomeRecorder({
      deps,
      sessionId: record.sessionId,
      producers: this.#producers,
      record: () => this.record,
      finished: () => this.finished,
      ownerEpoch: () => this.ownerEpoch,
      streams: () => this.streams(),
      forget: (stream, reason) => this.#streams.forget(stream, reason),
      cancelInputByServer: (stream, reason) => this.cancelInputByServer(stream, reason),
      abortInvocation: (reason) => this.#invocationAbort.abort(reason),
      lostOwnership: (error) => this.#lostOwnership(error),
      finishCommitted: (outcome, text, at) => this.#finishCommitted(outcome, text, at),
    });
    this.#attachment = new AttachmentSlot({
      deps,
      record: () => this.record,
      mayGiveUp: () => this.role === "owner" && this.#running && !this.finished,
      remote: () => this.remote,
      failing: () => this.#outcome.failing,
      attachmentAlive: () => this.#cluster?.attachmentAlive(),
      terminalizeAll: (reason) => this.terminalizeAll(reason),
      failUnreturned: (why) => (this.#method.returned ? Promise.resolve() : this.#outcome.fail(new Error(why))),
      fail: (error) => this.#outcome.fail(error),
    });
    this.#cluster = deps.cluster === undefined ? undefined : this.#newFollower();
    this.#input = new SessionInput({
      deps,
      owner: this.owner,
      permits: this.permits,
      cluster: this.#cluster,
      attachment: () => this.#attachment.current,
      remote: () => this.remote,
      failing: () => this.#outcome.failing,
      clientWriteEpoch: () => this.#clientWriteEpoch,
      ownerEpoch: () => this.ownerEpoch,
      adopt: (pending) => this.adopt(pending),
      childrenOf: (streamId, sequence) => this.#streams.childrenOf(streamId, sequence),
      fail: (error) => this.#outcome.fail(error),
      lostOwnership: (error) => this.#lostOwnership(error),
    });
    this.#method = new MethodRun({
      deps,
      sessionId: record.sessionId,
      streams: this.#streams,
      producers: this.#producers,
      invocationSignal: this.#invocationAbort.signal,
      record: () => this.record,
      ownerEpoch: () => this.ownerEpoch,
      failing: () => this.#outcome.failing,
      adopt: (pending) => this.adopt(pending),
      chargeStored: (bytes) => deps.storedBytes.charge(this.owner, bytes),
      openQueue: (stream) => this.#input.openQueue(stream),
      feed: (stream) => this.#input.feed(stream),
      cancelInputByServer: (stream, reason) => this.cancelInputByServer(stream, reason),
      rerunStarted: () => this.#attachment.waitIfNone(),
      resultCommitted: (text) => {
        this.record = { ...this.record, result: text };
        this.#attachment.current?.resultCommitted();
      },
      finish: (outcome, record) => this.#outcome.finish(outcome, record),
      fail: (error) => this.#outcome.fail(error),
    });
  }

  /** The cluster half's view of this session: what it may read and do. */
  #newFollower(): ClusterFollower {
    return new ClusterFollower({
      deps: this.deps,
      sessionId: this.sessionId,
      record: () => this.record,
      replaceRecord: (record) => (this.record = record),
      finishing: () => this.#outcome.finishing,
      stream: (streamId) => this.#streams.get(streamId),
      childrenOf: (streamId, sequence) => this.#streams.childrenOf(streamId, sequence),
      registerStored: (stored) => this.#registerStored(stored),
      attachment: () => this.#attachment.current,
      revoke: (sink) => this.#attachment.revoke(sink),
      attachmentElsewhere: () => this.#attachment.attachedElsewhere(),
      cancelOutput: (stream, reason) => this.cancelOutput(stream, reason),
      delivered: (stream, bytes) => this.delivered(stream, bytes),
      remoteDeliveryLost: () => this.#remoteDeliveryLost(),
      charge: (bytes) => this.permits.charge(bytes),
      stopInvocation: (why) => this.#stopInvocation(why),
      fail: (error) => void this.#outcome.fail(error),
    });
  }

  // ------------------------------------------------------------ ownership and the cluster

  get sessionId(): string {
    return this.record.sessionId;
  }

  /**
   * The epoch the commits of the client's input (and its input ends) carry: the ownership epoch
   * at the owner, fenced by the store; none at a node that only serves the attachment (the
   * client's input is not the invocation's writing). The invocation's own writes (output, the
   * result, the outcome, the server's input terminals) always carry `ownerEpoch`: a former owner's
   * stay fenced after it turned mirror.
   */
  get #clientWriteEpoch(): bigint | undefined {
    return this.role === "owner" ? this.ownerEpoch : undefined;
  }

  /** Stops the invocation here at once, recording nothing more (`why` is the abort's message). */
  #stopInvocation(why: string): void {
    this.#outcome.stop();
    this.#running = false;
    this.#invocationAbort.abort(new Error(why));
    for (const stream of this.#streams.values()) stream.producer?.abort(new Error(why));
  }

  /**
   * A write made for a client's message (an input's end, a cancel) was refused for this node's
   * ownership epoch: the same as when the invocation's own write is (`#lostOwnership`).
   */
  ownershipLost(error: unknown): void {
    this.#lostOwnership(error);
  }

  /**
   * The store refused a write for its ownership epoch: another node claimed the session (this
   * node's lease had lapsed while it was alive). Nothing more is written and nothing is retried:
   * the invocation stops here, the node turns mirror, and the local attachment is closed so the
   * client resumes from what the store holds (the new owner's outcome), at whichever node, as
   * after any takeover. Without an attachment the session then leaves memory.
   */
  #lostOwnership(error: unknown): void {
    if (this.#ownershipLost) return;
    this.#ownershipLost = true;
    // A later epoch is another node's claim (this node's lease had lapsed) or a later process
    // started with this node's id, which recovered the session at start (node-lifecycle.ts).
    this.deps.logger.warn(
      "the session was claimed at a later ownership epoch (by another node, or a later process of this node id): its invocation stops here",
      {
        event: "session.ownership-lost",
        session: this.sessionId,
        epoch: String(this.ownerEpoch),
        error: String(error),
      },
    );
    // Already a mirror: it learned from the change feed that the session was finished elsewhere,
    // stopped the invocation and follows the store; its attachment serves what the store holds.
    const mirror = this.role === "mirror";
    this.#stopInvocation("another node claimed the session");
    this.#attachment.stopWatching();
    if (mirror || this.#cluster === undefined) return;
    this.#cluster.role = "mirror";
    this.#attachment.current?.ownershipMoved();
  }

  /** The invocation is failing or was stopped here: its failure, if this node records one, is on its way. */
  get failing(): boolean {
    return this.#outcome.failing;
  }

  get finished(): boolean {
    return this.record.state === "finished";
  }

  /** An outcome of this node's (a success or a failure) is being recorded: the invocation is ending here. */
  get ending(): boolean {
    return this.#outcome.finishing || this.#outcome.failing;
  }

  get attachment(): AttachmentSink | undefined {
    return this.#attachment.current;
  }

  /** Cluster mode: whether this node runs the invocation (`owner`) or only serves attachments to it while another node runs it (`mirror`); one node always runs it. */
  get role(): "owner" | "mirror" {
    return this.#cluster?.role ?? "owner";
  }

  set role(role: "owner" | "mirror") {
    if (this.#cluster === undefined) throw new Error("only a session in a cluster has a role");
    this.#cluster.role = role;
  }

  /** Cluster mode: other nodes may write this session too (cluster-follower.ts). */
  get clustered(): boolean {
    return this.#cluster !== undefined;
  }

  /** A mirror of a running session: another node runs it, this one serves its attachment. */
  get remote(): boolean {
    return this.#cluster !== undefined && this.#cluster.remote;
  }

  /** Cluster mode: starts following the session's changes on other nodes. */
  follow(store: ClusterSessionStore): void {
    this.#cluster?.follow(store);
  }

  /** Stops following (the session leaves memory). */
  unfollow(): void {
    this.#cluster?.unfollow();
    this.#attachment.stopWatching();
  }

  /** Announces an exact replay's attachment as the generation's sole owner to the other nodes. */
  async claimAttachment(sink: AttachmentSink): Promise<void> {
    await this.#cluster?.claimAttachment(sink);
  }

  /** Cluster mode: re-reads the session from the store after another node committed to it (cluster-follower.ts). */
  syncFromStore(): Promise<void> {
    return this.#cluster === undefined ? Promise.resolve() : this.#cluster.syncFromStore();
  }

  // ------------------------------------------------------------ streams (stream-registry.ts)

  /** Streams in creation order (the order mappings list them). */
  streams(): StreamState[] {
    return this.#streams.inOrder();
  }

  stream(streamId: string): StreamState | undefined {
    return this.#streams.get(streamId);
  }

  streamByToken(token: string): StreamState | undefined {
    return this.#streams.byToken(token);
  }

  childrenOf(streamId: string, sequence: bigint): readonly StreamState[] {
    return this.#streams.childrenOf(streamId, sequence);
  }

  resultStreams(): StreamState[] {
    return this.streams().filter((s) => s.parent.kind === "result");
  }

  /** A stream another node created (cluster mode). */
  #registerStored(stored: StreamRecord): StreamState {
    const stream = this.#streams.registerStored(stored);
    if (stream.direction === "input" && this.#running) this.#input.openQueue(stream);
    return stream;
  }

  /**
   * Turns the stream leaves of a validated value into new streams (not yet
   * committed). `graph` is the graph the value was validated against.
   */
  prepareStreams(
    leaves: readonly StreamLeaf[],
    graph: SchemaGraph,
    direction: "input" | "output",
    parent: StreamParent,
    coordinatePrefix: string,
  ): PendingStream[] {
    return this.#streams.prepare(leaves, graph, direction, parent, coordinatePrefix);
  }

  /** Registers prepared streams in memory (just before their commit; see the file comment). */
  adopt(pending: readonly PendingStream[]): void {
    for (const { state, stored } of pending) {
      if (stored === true) continue;
      this.#streams.register(state);
      if (state.direction === "input" && this.#running) this.#input.openQueue(state);
    }
  }

  // ------------------------------------------------------------ attachments (attachment-slot.ts)

  /** Makes `sink` the sole owner; the previous owner is revoked first. */
  attach(sink: AttachmentSink): void {
    this.#attachment.attach(sink);
  }

  detach(sink: AttachmentSink): void {
    this.#attachment.detach(sink);
  }

  // ------------------------------------------------------------ output windows (output-windows.ts)

  /** An output event of `bytes` payload bytes was recorded and not yet sent: charged to the session's byte permits. */
  recorded(stream: StreamState, bytes: number): void {
    chargeUnsent(stream, bytes, this.permits);
  }

  /** The attachment sent one output event of `stream` (`bytes` of payload): the producer may run further ahead. */
  delivered(stream: StreamState, bytes = 0): void {
    const cluster = this.#cluster;
    if (cluster?.remote === true) {
      cluster.delivered(stream, bytes);
      return;
    }
    releaseSent(stream, bytes, this.permits);
  }

  /**
   * Owner, attachment at another node: some of its `delivered` changes may
   * have been lost with the store's feed (an outage), and the windows would
   * then never open again. They start afresh instead: the producers may run
   * up to one more window ahead of that client, a bound loosened once per
   * lost feed connection rather than a stall. A local attachment's progress
   * is never lost: nothing changes then.
   */
  #remoteDeliveryLost(): void {
    if (this.#attachment.current !== undefined) return;
    restartWindows(this.#streams.values(), this.permits);
  }

  // ------------------------------------------------------------ input (session-input.ts)

  /**
   * Accepts the next chunk of `stream` (session-input.ts): resolves to the
   * promise of its commit, after which (and only after which) the client may
   * be told (or `LISTENER_TOLD`: only `listener` is told of the commit), or
   * to undefined when the chunk no longer continues the stream or `owner`
   * was replaced.
   */
  acceptInput(
    owner: AttachmentSink,
    stream: StreamState,
    chunk: InputChunk,
    item: InputItem,
    introduced: readonly PendingStream[],
    permitBytes: number,
    listener?: InputCommitListener,
  ): InputAcceptance | Promise<InputAcceptance> {
    return this.#input.acceptInput(owner, stream, chunk, item, introduced, permitBytes, listener);
  }

  /** Natural end of an input, from the client, at `stream.count`. */
  endInput(stream: StreamState): Promise<boolean> {
    return this.#input.endInput(stream);
  }

  /** A client `streamCancel` on an input (decisions section 8). */
  cancelInputByClient(stream: StreamState, reason: ClientCancelReason): Promise<boolean> {
    return this.#input.cancelInputByClient(stream, reason);
  }

  /** The server ends an input: the agent stopped reading, or the invocation failed. */
  cancelInputByServer(stream: StreamState, reason: ServerCancelReason): Promise<void> {
    return this.#input.cancelInputByServer(stream, reason);
  }

  // ------------------------------------------------------------ output

  /** A client `streamCancel` on an output: the stream ends `cancelled` with the client's reason. */
  async cancelOutput(stream: StreamState, reason: ClientCancelReason): Promise<void> {
    if (this.#cluster?.remote === true) {
      await this.#cluster.forwardCancel(stream, reason);
      return;
    }
    stream.producer?.abort(new Error("output cancelled"));
    await this.#producers.appendTerminal(stream, { kind: "cancelled", reason });
  }

  // ------------------------------------------------------------ execution and outcome (method-run.ts, outcome-recorder.ts)

  /**
   * Runs the method (method-run.ts). Resolves when the invocation has
   * finished (durably), never rejects: every failure becomes a failed finish.
   */
  run(method: MethodDescriptor, context: InvocationInput, options: RunOptions = { journaled: false }): Promise<void> {
    this.#running = true;
    return this.#method.run(method, context, options);
  }

  /** Cancels every open input and output with `reason` (used by failure and restart recovery). */
  terminalizeAll(reason: ServerCancelReason): Promise<void> {
    return this.#outcome.terminalizeAll(reason);
  }

  /** Marks a session that was running when the process stopped as failed (embedded host; see docs). */
  failInterrupted(): Promise<void> {
    return this.#outcome.failInterrupted();
  }

  /** The outcome is committed (outcome-recorder.ts): this node's copy, the detached wait, the observers and the attachment follow. */
  #finishCommitted(outcome: InvocationOutcome, text: string, at: number): void {
    this.record = { ...this.record, state: "finished", outcome: text, finishedAt: at };
    this.#running = false;
    this.#attachment.stopWatching();
    this.deps.observer.sessionFinished(
      identityOf(this.record),
      outcome.kind === "success" ? "success" : outcome.code,
      at - this.record.createdAt,
    );
    this.#attachment.current?.finished();
  }

  /** Ends the running invocation now as failed (a drain's deadline): streams terminated, `invocation-failed`. */
  async failNow(): Promise<void> {
    if (this.#running) await this.#outcome.fail(new Error("the server stopped the invocation"));
    else if (!this.finished) await this.failInterrupted();
  }

  /** Whether an invocation runs here now. */
  get running(): boolean {
    return this.#running;
  }

  /**
   * This node claimed the session again while an earlier run of it still went on here (the node's
   * lease had lapsed unnoticed, another node claimed the session and lost it too): that run stops,
   * recording nothing more (its writes carry the epoch it had, which the store now refuses), and
   * its client is closed 1001 to resume at the session loaded afresh for the re-run. Left running,
   * it would write at the new epoch beside the re-run, every item twice.
   */
  supersede(): void {
    this.#stopInvocation("this node claimed the session again: a re-run replaces this run");
    this.#attachment.stopWatching();
    this.#attachment.current?.ownershipMoved();
  }

  /** Aborts the running invocation without recording anything (server shutdown, or a drain's deadline). */
  abortForShutdown(): void {
    // Nothing more is recorded: its next owner (this node when it starts again, or another node
    // that claims it) finds the session running and runs it again, or fails it when its method
    // cannot be (docs/durable-execution.md).
    this.#outcome.shutDown();
    this.#attachment.stopWatching();
    this.#invocationAbort.abort(new Error("server shutting down"));
  }
}

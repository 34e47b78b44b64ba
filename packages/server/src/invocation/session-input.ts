/**
 * The input side of a live session: the agent's queue of each input stream,
 * accepting a client's chunks (counted against the principal's stored bytes,
 * handed to the store and to the agent, the client told only after the
 * commit), feeding the agent what the store holds and it has not had, and
 * recording an input's terminal once, whoever ends it.
 *
 * Apart from `LiveSession` because it is the session's hottest path (one
 * call per input item: nothing here allocates a promise or an async frame
 * in the common case, docs/performance.md) and its own order of steps: a
 * newcomer reads it whole without the output side or the outcome.
 */
import type { ClientCancelReason, ServerCancelReason } from "@golem-stream/wire";
import type { Principal } from "../options.js";
import type { InputChunk, InputTerminal, NewStream, SessionStore } from "../store/session-store.js";
import { isOwnershipLost } from "../store/ownership.js";
import { LISTENER_TOLD, type AttachmentSink, type InputAcceptance, type InputCommitListener } from "./attachment-sink.js";
import type { BytePermits } from "./byte-permits.js";
import type { ClusterFollower } from "./cluster-follower.js";
import { feedInput } from "./input-feed.js";
import { InputQueue } from "./input-queue.js";
import { WatchedInputCommit } from "./watched-input-commit.js";
import type { SessionDeps } from "./session-deps.js";
import { itemFrom, type InputItem, type PendingStream, type StreamState } from "./stream-state.js";

/** The new streams a chunk that introduces none (most) hands the store: one shared empty list. */
const NO_RECORDS: readonly NewStream[] = Object.freeze([]);

/** What the input side needs from its session. */
export interface InputHost {
  readonly deps: SessionDeps;
  readonly owner: Principal;
  readonly permits: BytePermits;
  /** Cluster mode only (`deps.cluster`): following the other nodes (cluster-follower.ts). */
  readonly cluster: ClusterFollower | undefined;
  /** The attachment that owns the session, if any. */
  attachment(): AttachmentSink | undefined;
  /** A mirror of a running session: another node runs it, this one serves its attachment. */
  remote(): boolean;
  /** The invocation is failing (or stopped): an agent that stops reading is not a consumer drop. */
  failing(): boolean;
  /** The epoch the commits of the client's input carry (`LiveSession`'s comment says why it may be none). */
  clientWriteEpoch(): bigint | undefined;
  /** The epoch the invocation's own writes carry (a server cancel of an input is one). */
  ownerEpoch(): bigint;
  /** Registers prepared streams just before their commit. */
  adopt(pending: readonly PendingStream[]): void;
  /** The streams item `sequence` of stream `streamId` introduced. */
  childrenOf(streamId: string, sequence: bigint): readonly StreamState[];
  /** Fails the invocation (once); never rejects. */
  fail(error: unknown): Promise<void>;
  /** The store refused a write for a stale ownership epoch: another node claimed the session. */
  lostOwnership(error: unknown): void;
}

export class SessionInput {
  readonly #host: InputHost;

  constructor(host: InputHost) {
    this.#host = host;
  }

  /** Gives an input its agent queue (while the invocation runs here): an agent that stops reading ends it `consumer-drop`. */
  openQueue(state: StreamState): void {
    state.queue = new InputQueue<InputItem>(this.#host.deps.limits.maxQueuedEntriesPerStream, this.#host.permits, () => {
      // A reader also stops when the method throws out of its loop: give that
      // failure a turn to surface, so the input ends as invocation-failed
      // rather than as an ordinary consumer drop.
      setImmediate(() => {
        if (!this.#host.failing()) this.cancelInputByServer(state, "consumer-drop").catch((error: unknown) => this.#host.fail(error));
      });
    });
  }

  /**
   * Accepts the next chunk of `stream`: hands it to the store and `item` to
   * the agent, and returns the promise of its commit, after which (and only
   * after which) the client may be told. The connection goes on decoding
   * while the commit is pending, so consecutive items share one sync.
   * With a `listener`, the commit may instead be told only to it
   * (`LISTENER_TOLD`: one node, a value that introduces no stream, a store
   * with `acceptInputWatched`), with no promise made.
   * Returns undefined if the chunk no longer continues the stream (it
   * became terminal meanwhile) or `owner` was replaced; its permits are
   * then released.
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
    // The common case waits for nothing and returns at once: no promise and no
    // async frame per item (measured on 64-byte items, docs/performance.md).
    const queue = stream.queue;
    if ((queue === undefined || queue.hasSpace) && !this.#host.remote())
      return this.#acceptNow(owner, stream, chunk, item, introduced, permitBytes, listener);
    return this.#acceptAfterWaiting(owner, stream, chunk, item, introduced, permitBytes, listener);
  }

  async #acceptAfterWaiting(
    owner: AttachmentSink,
    stream: StreamState,
    chunk: InputChunk,
    item: InputItem,
    introduced: readonly PendingStream[],
    permitBytes: number,
    listener: InputCommitListener | undefined,
  ): Promise<InputAcceptance> {
    const queue = stream.queue;
    if (queue !== undefined && !queue.hasSpace) {
      this.#host.deps.observer.backpressure("input-queue");
      await queue.waitForSpace();
    }
    if (this.#host.cluster?.remote === true) await this.#host.cluster.waitForInputRoom(stream);
    return this.#acceptNow(owner, stream, chunk, item, introduced, permitBytes, listener);
  }

  #acceptNow(
    owner: AttachmentSink,
    stream: StreamState,
    chunk: InputChunk,
    item: InputItem,
    introduced: readonly PendingStream[],
    permitBytes: number,
    listener: InputCommitListener | undefined,
  ): InputAcceptance {
    // A transport replaced while it waited accepts nothing more: the new
    // owner's mappings already reported the high-water.
    if (this.#host.attachment() !== owner || stream.inputTerminal !== undefined || chunk.sequence !== stream.count) {
      this.#host.permits.release(permitBytes);
      return undefined;
    }
    // Counted before the store is handed it, so the next chunk sees it. An item
    // over the principal's bound is never stored (so never acknowledged): where
    // the invocation runs it fails with `limit-exceeded` (its inputs end
    // `invocation-failed`); a node that only mirrors the session cannot fail an
    // invocation it does not run, so this attachment ends with the refusal.
    const refused = this.#host.deps.storedBytes.charge(this.#host.owner, chunk.data.length);
    if (refused !== undefined) {
      // Thrown, the message failed: its handler releases its permits (attachment-input.ts).
      if (this.#host.remote()) throw refused;
      this.#host.permits.release(permitBytes);
      void this.#host.fail(refused);
      return undefined;
    }
    // From here to the store call nothing awaits: the sequence is ours.
    this.#host.adopt(introduced);
    stream.count += chunk.itemCount;
    // The agent gets only what it has not had yet: in a cluster, items an
    // attachment at another node committed may have been fed to it already.
    // And not before what it has not had yet: while the feed from the store
    // is behind this chunk (another node's items, committed, not yet handed
    // on), the chunk waits for its commit and reaches the agent through the
    // feed, in order. Handed on now, it would overtake them, and the feed
    // would then skip them as fed (a short digest, seen in methods-under-cuts).
    const behind = stream.fed < chunk.sequence;
    const fresh = behind ? undefined : itemFrom(item, chunk.sequence, stream.fed);
    if (!behind && stream.count > stream.fed) stream.fed = stream.count;
    this.#host.deps.observer.inputAccepted(stream.elementKind, Number(chunk.itemCount), chunk.data.length);
    this.#host.cluster?.inputHandedOver(stream, chunk.data.length);
    // The permits cover the store's copy until the commit as well as the
    // agent's until it takes the item (released at the take alone, input
    // outran a slow disk with nothing to stop it). A value is held twice,
    // decoded for the agent and re-encoded for the store, and was charged
    // twice (see connection.ts): one half goes with each. Bytes are one
    // buffer both hold: released when both are done.
    const storeCopy = item.kind === "value" ? Math.floor(permitBytes / 2) : 0;
    const agentCopy = permitBytes - storeCopy;
    // The common case (one node, a value that introduces no stream, an attachment that listens):
    // the store tells one small object of the commit; no promise, closure or reaction per item.
    if (
      listener !== undefined &&
      storeCopy > 0 &&
      introduced.length === 0 &&
      this.#host.cluster === undefined &&
      this.#host.deps.store.acceptInputWatched !== undefined
    ) {
      this.#commitWatched(stream, chunk, fresh, storeCopy, agentCopy, listener);
      if (behind && stream.queue !== undefined) this.feed(stream);
      return LISTENER_TOLD;
    }
    const committed = this.#commitPromised(stream, chunk, introduced, fresh, storeCopy, agentCopy, listener);
    if (behind && stream.queue !== undefined) this.feed(stream);
    return { committed, count: stream.count };
  }

  /**
   * Hands the store a chunk whose commit it tells a `WatchedInputCommit`, and `fresh` to the
   * agent's queue. Apart from `#commitPromised` so that this path makes no closure (and no
   * function context for one): nothing but the watcher per item.
   */
  #commitWatched(
    stream: StreamState,
    chunk: InputChunk,
    fresh: InputItem | undefined,
    storeCopy: number,
    agentCopy: number,
    listener: InputCommitListener,
  ): void {
    const queue = fresh === undefined ? undefined : stream.queue;
    const releaseBytes = queue === undefined ? storeCopy + agentCopy : storeCopy;
    const store = this.#host.deps.store as Required<Pick<SessionStore, "acceptInputWatched">> & Pick<SessionStore, "joinInputWatched">;
    const epoch = this.#host.clientWriteEpoch();
    // The stream's chunk before this one may still wait for its group: joined to it, this one
    // shares its write and its watcher (watched-input-commit.ts).
    const last = stream.lastWatchedCommit;
    if (last !== undefined && last.listener === listener && store.joinInputWatched?.(chunk, epoch, last) === true) {
      last.extend(stream.count, releaseBytes);
    } else {
      const commit = new WatchedInputCommit(this.#host, stream, chunk.sequence, stream.count, releaseBytes, listener);
      stream.lastWatchedCommit = commit;
      stream.watchedCommitIssued();
      try {
        store.acceptInputWatched(chunk, epoch, commit);
      } catch (error) {
        settleLater(commit, error);
      }
    }
    // The agent's half of the permits: released when it takes the item (the store's copy is the watcher's).
    if (queue !== undefined) queue.push(fresh as InputItem, agentCopy);
  }

  /** Hands the store a chunk with a promise of its commit, reacted to once; `fresh` to the agent's queue. */
  #commitPromised(
    stream: StreamState,
    chunk: InputChunk,
    introduced: readonly PendingStream[],
    fresh: InputItem | undefined,
    storeCopy: number,
    agentCopy: number,
    listener: InputCommitListener | undefined,
  ): Promise<void> {
    const committed = this.#commitInput(
      stream,
      chunk,
      introduced.length === 0 ? NO_RECORDS : introduced.map((p) => p.record),
      this.#host.clientWriteEpoch(),
    );
    // One reaction per outcome (not a chain of catch/then per item): release the store's copy, and
    // on failure fail the invocation. A position conflict only ends the attachment (the client
    // resumes); a mirror never fails the invocation it does not run.
    const count = stream.count;
    stream.inputCommitted = committed.then(
      () => {
        if (storeCopy > 0) this.#host.permits.release(storeCopy);
        listener?.committed(stream, count, 1);
      },
      (error: unknown) => {
        if (storeCopy > 0) this.#host.permits.release(storeCopy);
        // One node: the stream ends where its commits end (a cluster's follower sets it from the store).
        if (this.#host.cluster === undefined && chunk.sequence < stream.count) stream.count = chunk.sequence;
        if (this.#host.cluster?.sparesInvocation(error) !== true) void this.#host.fail(error);
        listener?.failed(error, 1);
      },
    );
    if (stream.queue !== undefined && fresh !== undefined)
      stream.queue.push(fresh, agentCopy, storeCopy > 0 ? undefined : stream.inputCommitted);
    else void stream.inputCommitted.then(() => this.#host.permits.release(agentCopy));
    return committed;
  }

  /** Hands the agent the committed items of `stream` it has not had (input-feed.ts); in a cluster, through the follower. */
  feed(stream: StreamState): void {
    if (this.#host.cluster !== undefined) {
      this.#host.cluster.feed(stream);
      return;
    }
    const host = this.#host;
    void feedInput(stream, {
      store: host.deps.store,
      charge: (bytes) => host.permits.charge(bytes),
      childrenOf: (streamId, sequence) => host.childrenOf(streamId, sequence),
    }).catch((error: unknown) => host.fail(error));
  }

  /** Commits an accepted chunk (in a cluster, as `ClusterFollower.checkedCommit` says). */
  #commitInput(stream: StreamState, chunk: InputChunk, introduced: readonly NewStream[], epoch: bigint | undefined): Promise<void> {
    let committed: Promise<void>;
    try {
      committed = this.#host.deps.store.acceptInput(chunk, introduced, epoch);
    } catch (error) {
      // A store that throws instead of rejecting fails the commit all the same.
      committed = Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    // One node: the store's promise as it is (no async frame per item: measured on 64-byte items).
    if (this.#host.cluster === undefined) return committed;
    return this.#host.cluster.checkedCommit(stream, chunk, introduced, committed);
  }

  /** Natural end of an input, from the client, at `stream.count` (in a cluster, where the committed items end: `ClusterFollower.checkEnd`). */
  async endInput(stream: StreamState): Promise<boolean> {
    if (this.#host.cluster !== undefined) await this.#host.cluster.checkEnd(stream);
    return this.#terminateInput(stream, { kind: "end" }, (queue) => queue.end());
  }

  /** A client `streamCancel` on an input (decisions section 8). */
  cancelInputByClient(stream: StreamState, reason: ClientCancelReason): Promise<boolean> {
    return this.#terminateInput(stream, { kind: "cancelled", reason, by: "client" }, (queue) =>
      // consumer-drop says nobody wants the rest: a normal end for the agent.
      reason === "consumer-drop" ? queue.end() : queue.cancel(reason),
    );
  }

  /** The server ends an input: the agent stopped reading, or the invocation failed. */
  cancelInputByServer(stream: StreamState, reason: ServerCancelReason): Promise<void> {
    const open = stream.inputTerminal === undefined;
    const sent = (async () => {
      const changed = await this.#terminateInput(stream, { kind: "cancelled", reason, by: "server" }, (queue) => queue.cancel(reason));
      if (changed) this.#host.attachment()?.inputCancelledByServer(stream, reason);
    })();
    // Only the call that records the terminal (synchronously, above) sets it: a later call returns at once.
    if (open) stream.serverCancelSent = sent.catch(() => undefined);
    return sent;
  }

  /**
   * Records an input terminal once; resolves to whether this call recorded
   * it. The check and the mark are synchronous, so of two concurrent
   * terminals exactly one wins, and the store receives it after every chunk
   * already handed to it.
   */
  async #terminateInput(stream: StreamState, terminal: InputTerminal, onQueue: (queue: InputQueue<InputItem>) => void): Promise<boolean> {
    if (stream.inputTerminal !== undefined) return false;
    stream.inputTerminal = terminal;
    const written = this.#host.deps.store.endInput(
      stream.streamId,
      terminal,
      terminal.kind === "cancelled" && terminal.by === "server" ? this.#host.ownerEpoch() : this.#host.clientWriteEpoch(),
      // A natural end only where its items are: behind a chunk whose commit fails, it is refused.
      terminal.kind === "end" ? stream.count : undefined,
    );
    const settled = written.then(
      () => undefined,
      () => undefined,
    );
    stream.inputTerminalWrite = settled;
    try {
      await written;
    } catch (error) {
      // Not recorded: the stream is still open, and recording a failure tries again.
      if (stream.inputTerminal === terminal) stream.inputTerminal = undefined;
      if (isOwnershipLost(error)) this.#host.lostOwnership(error);
      throw error;
    } finally {
      if (stream.inputTerminalWrite === settled) stream.inputTerminalWrite = undefined;
    }
    // A natural end waits behind the items the feed has not handed on yet
    // (cluster: another node's); the feed ends the queue after the last one.
    if (terminal.kind === "end" && stream.fed < stream.count && stream.queue !== undefined) this.feed(stream);
    else if (stream.queue !== undefined) onQueue(stream.queue);
    return true;
  }
}

/** A store that threw instead of telling: the commit failed all the same, told after the call returned (as the store would have). */
function settleLater(commit: WatchedInputCommit, error: unknown): void {
  queueMicrotask(() => commit.inputSettled(error instanceof Error ? error : new Error(String(error))));
}

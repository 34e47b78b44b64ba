/**
 * The cluster folder owns what nodes sharing one store need beyond a single
 * node: the node-to-node side of a session (this file), whether this node
 * may claim other nodes' sessions across a store outage, and the check that
 * every node serves the same catalogue. Elsewhere today: the leases and
 * fencing epochs are the store's (store/cluster-store.ts,
 * store/ownership.ts), the heartbeat and the orphan claims' timing are
 * lease-keeper.ts's, and the follower that keeps a loaded session in step
 * is invocation/cluster-follower.ts.
 *
 * The node-to-node side of one session loaded in cluster mode (see
 * docs/cluster.md). The node that runs the invocation is its owner; any
 * node may serve the client's attachment. Both sides work through the
 * store: each commits what it is responsible for (the owner output, the
 * attachment's node input), and learns what the other committed from the
 * store's change feed, then reads the store. Changes that are not writes
 * travel on the feed alone: a client's cancel of an output (to the owner),
 * the attachment's delivery progress (to the owner's output window), and
 * the owner's consumption of input (to the attachment's input window).
 *
 * Every change only makes the session re-read the store (`sync`), so a
 * lost, repeated or coalesced notification costs a read, never data.
 */
import type { ClientCancelReason } from "@golem-stream/wire";
import type { ClusterSessionStore, SessionChange } from "../store/cluster-store.js";

/** What the peer needs from its session. */
export interface PeerSession {
  readonly sessionId: string;
  /** Re-reads the session's state from the store and acts on what changed. */
  syncFromStore(): Promise<void>;
  /** A resume, takeover or exact replay elsewhere: revoke the local attachment unless it is the one named. */
  attachedElsewhere(generation: bigint, attachment: string | undefined): Promise<void>;
  /** Owner: a client cancelled an output at another node. */
  cancelOutputById(streamId: string, reason: ClientCancelReason): Promise<void>;
  /** Owner: the attachment at another node sent `events` events, `bytes` bytes, of the stream. */
  deliveredRemotely(streamId: string, events: number, bytes: number): void;
  /** Owner: another node still serves an attachment to the session (its `alive` change). */
  attachedRemotely(): void;
  /** Owner: delivery progress from another node may have been lost (a `resync`): the output windows start afresh. */
  deliveryLost(): void;
  readonly logger: { warn(message: string, fields?: Record<string, unknown>): void };
}

/**
 * What an attachment's node commits beyond what the owner's agent has taken,
 * per input stream: this many chunks, or this many payload bytes, whichever
 * comes first (a chunk is always accepted into an empty window, so a single
 * chunk larger than the bytes still passes). The owner reads what is beyond
 * its agent in one store read, so the bytes bound that read too. Small items
 * need the count high: at 256 chunks, two nodes spent their time waiting for
 * `consumed` changes; at 1024, about 1.3x the items per second.
 */
export const INPUT_WINDOW_CHUNKS = 1024;
export const INPUT_WINDOW_BYTES = 64 * 1024 * 1024;

/** An input chunk committed at the attachment's node and not yet taken by the owner. */
interface HandedOver {
  readonly end: bigint;
  readonly bytes: number;
}

export class ClusterPeer {
  readonly #store: ClusterSessionStore;
  readonly #session: PeerSession;
  readonly #unsubscribe: () => void;
  #syncing = false;
  #dirty = false;
  #closed = false;
  /** Delivery progress not yet published, per stream (coalesced to one change per turn). */
  readonly #delivered = new Map<string, { events: number; bytes: number }>();
  #deliveryScheduled = false;
  /** Input consumption not yet published, per stream. */
  readonly #consumed = new Map<string, bigint>();
  #consumptionScheduled = false;
  /** Attachment side: committed chunks the owner has not taken yet, and their bytes, per stream. */
  readonly #unconsumed = new Map<string, { chunks: HandedOver[]; bytes: number }>();
  readonly #takenByOwner = new Map<string, bigint>();
  readonly #windowWaiters = new Map<string, (() => void)[]>();

  constructor(store: ClusterSessionStore, session: PeerSession) {
    this.#store = store;
    this.#session = session;
    this.#unsubscribe = store.subscribe(session.sessionId, (change) => this.#onChange(change));
  }

  close(): void {
    this.#closed = true;
    this.#unsubscribe();
    for (const waiters of this.#windowWaiters.values()) for (const wake of waiters.splice(0)) wake();
  }

  #onChange(change: SessionChange): void {
    if (this.#closed) return;
    switch (change.kind) {
      case "output":
      case "input":
      case "result":
      case "finished":
        this.sync();
        return;
      case "attached":
        void this.#session
          .attachedElsewhere(BigInt(change.generation), change.attachment)
          .catch((error: unknown) => this.#warn("attach change", error));
        return;
      case "cancel":
        void this.#session.cancelOutputById(change.streamId, change.reason).catch((error: unknown) => this.#warn("remote cancel", error));
        return;
      case "delivered":
        this.#session.deliveredRemotely(change.streamId, change.events, change.bytes);
        return;
      case "consumed":
        this.#ownerTook(change.streamId, BigInt(change.sequence));
        return;
      case "alive":
        this.#session.attachedRemotely();
        return;
      case "resync":
        this.#session.deliveryLost();
        this.sync();
        return;
    }
  }

  /** Re-reads the store now, or once more after the read in flight. */
  sync(): void {
    if (this.#closed) return;
    this.#dirty = true;
    if (this.#syncing) return;
    this.#syncing = true;
    void (async () => {
      try {
        while (this.#dirty && !this.#closed) {
          this.#dirty = false;
          await this.#session.syncFromStore();
        }
      } catch (error) {
        this.#warn("sync", error);
      } finally {
        this.#syncing = false;
      }
    })();
  }

  #warn(what: string, error: unknown): void {
    this.#session.logger.warn(`cluster ${what} failed`, {
      event: "cluster.peer-failed",
      session: this.#session.sessionId,
      step: what,
      error: String(error),
    });
  }

  // ------------------------------------------------------------ attachment side

  /** Tells the owner that this node still serves an attachment to the session. */
  attachmentAlive(): void {
    void this.#store.publish(this.#session.sessionId, { kind: "alive" }).catch((error: unknown) => this.#warn("alive", error));
  }

  /** Forwards a client's cancel of an output to the owner, which records the terminal. */
  forwardCancel(streamId: string, reason: ClientCancelReason): Promise<void> {
    return this.#store.publish(this.#session.sessionId, { kind: "cancel", streamId, reason });
  }

  /** The local attachment sent an output event: tell the owner's window, once per turn per stream. */
  delivered(streamId: string, bytes: number): void {
    const pending = this.#delivered.get(streamId) ?? { events: 0, bytes: 0 };
    pending.events++;
    pending.bytes += bytes;
    this.#delivered.set(streamId, pending);
    if (this.#deliveryScheduled) return;
    this.#deliveryScheduled = true;
    setImmediate(() => {
      this.#deliveryScheduled = false;
      for (const [id, { events, bytes: total }] of this.#delivered) {
        void this.#store
          .publish(this.#session.sessionId, { kind: "delivered", streamId: id, events, bytes: total })
          .catch((error: unknown) => this.#warn("delivery", error));
      }
      this.#delivered.clear();
    });
  }

  /**
   * Waits until the owner has taken enough of the stream's input that one
   * more chunk keeps the window (`INPUT_WINDOW_CHUNKS` chunks or
   * `INPUT_WINDOW_BYTES` bytes committed and not yet taken), so an agent that
   * stops reading stops the client at any node.
   */
  async waitForInputRoom(streamId: string): Promise<void> {
    while (!this.#closed && this.#windowFull(streamId)) {
      await new Promise<void>((resolve) => {
        const waiters = this.#windowWaiters.get(streamId) ?? [];
        waiters.push(resolve);
        this.#windowWaiters.set(streamId, waiters);
      });
    }
  }

  /** A chunk of `bytes` payload bytes ending at `end` was handed to the store for the owner to take. */
  inputHandedOver(streamId: string, end: bigint, bytes: number): void {
    let pending = this.#unconsumed.get(streamId);
    if (pending === undefined) this.#unconsumed.set(streamId, (pending = { chunks: [], bytes: 0 }));
    pending.chunks.push({ end, bytes });
    pending.bytes += bytes;
  }

  #windowFull(streamId: string): boolean {
    const pending = this.#unconsumed.get(streamId);
    if (pending === undefined) return false;
    const taken = this.#takenByOwner.get(streamId) ?? -1n;
    let first = 0;
    while (first < pending.chunks.length && pending.chunks[first]!.end <= taken) pending.bytes -= pending.chunks[first++]!.bytes;
    if (first > 0) pending.chunks.splice(0, first);
    return pending.chunks.length >= INPUT_WINDOW_CHUNKS || pending.bytes >= INPUT_WINDOW_BYTES;
  }

  #ownerTook(streamId: string, sequence: bigint): void {
    if (sequence <= (this.#takenByOwner.get(streamId) ?? -1n)) return;
    this.#takenByOwner.set(streamId, sequence);
    for (const wake of this.#windowWaiters.get(streamId)?.splice(0) ?? []) wake();
  }

  // ------------------------------------------------------------ owner side

  /** The owner's agent queue has taken the stream's input below `sequence`. */
  consumed(streamId: string, sequence: bigint): void {
    this.#consumed.set(streamId, sequence);
    if (this.#consumptionScheduled) return;
    this.#consumptionScheduled = true;
    setImmediate(() => {
      this.#consumptionScheduled = false;
      for (const [id, taken] of this.#consumed) {
        void this.#store
          .publish(this.#session.sessionId, { kind: "consumed", streamId: id, sequence: String(taken) })
          .catch((error: unknown) => this.#warn("consumption", error));
      }
      this.#consumed.clear();
    });
  }

  /** Announces that `attachment` now solely owns `generation` (an exact replay here). */
  claimAttachment(generation: bigint, attachment: string): Promise<void> {
    return this.#store.publish(this.#session.sessionId, { kind: "attached", generation: String(generation), attachment });
  }
}

/**
 * The sessions this process holds in memory (`LiveSession`s), and the one
 * way to reach one: `load` answers from memory or reads the store, and two
 * attaches of one session share one load. It also queues each session's
 * attach decisions (`exclusive`) and evicts what no attachment holds any
 * more. What becomes of a session found running that no process of this
 * node runs (an interrupted one) is the node's to decide (`interrupted`,
 * node-lifecycle.ts): the cache only finds it.
 */
import { Attachment } from "../attachment/attachment.js";
import { LiveSession } from "../invocation/live-session.js";
import type { SessionDeps } from "../invocation/session-deps.js";
import { StreamState } from "../invocation/stream-state.js";
import type { SessionTransport } from "../transport/transport.js";
import { identityOf, type AttachOperation } from "../observability/server-observer.js";

/** Called with a session loaded as running that this process did not run: it re-runs or fails it. */
export type InterruptedHandler = (live: LiveSession) => Promise<void>;

export class SessionCache {
  readonly #deps: SessionDeps;
  readonly #interrupted: InterruptedHandler;
  readonly #live = new Map<string, LiveSession>();
  /** Loads in flight, so two attaches of one session share one `LiveSession`. */
  readonly #loading = new Map<string, Promise<LiveSession | undefined>>();
  /** The tail of each session's queue of attach decisions (see `exclusive`). */
  readonly #attachQueues = new Map<string, Promise<unknown>>();

  constructor(deps: SessionDeps, interrupted: InterruptedHandler) {
    this.#deps = deps;
    this.#interrupted = interrupted;
  }

  get size(): number {
    return this.#live.size;
  }

  /** The session if it is in memory now (nothing is loaded). */
  get(sessionId: string): LiveSession | undefined {
    return this.#live.get(sessionId);
  }

  /** Every session in memory. */
  values(): IterableIterator<LiveSession> {
    return this.#live.values();
  }

  /** A session this process just created (and committed). */
  add(live: LiveSession): void {
    this.#live.set(live.sessionId, live);
  }

  /** The session in memory, loading it from the store if needed. */
  load(sessionId: string): Promise<LiveSession | undefined> {
    const loaded = this.#live.get(sessionId);
    // In a cluster another node may have committed since: decide on what is committed.
    if (loaded !== undefined) return this.#deps.cluster === undefined ? Promise.resolve(loaded) : loaded.syncFromStore().then(() => loaded);
    let loading = this.#loading.get(sessionId);
    if (loading === undefined) {
      loading = this.#loadFromStore(sessionId).finally(() => this.#loading.delete(sessionId));
      this.#loading.set(sessionId, loading);
    }
    return loading;
  }

  async #loadFromStore(sessionId: string): Promise<LiveSession | undefined> {
    const record = await this.#deps.store.getSession(sessionId);
    if (record === undefined) return undefined;
    const streams = await this.#deps.store.listStreams(sessionId);
    const live = new LiveSession(
      this.#deps,
      record,
      streams.map((s) => new StreamState(s)),
    );
    const cluster = this.#deps.cluster;
    if (cluster === undefined) {
      // A running session that is not in memory was interrupted (this process
      // restarted): a replayable method runs again (docs/durable-execution.md), any other fails now.
      if (record.state === "running") await this.#interrupted(live);
    } else {
      live.follow(cluster);
      try {
        // Running here under this node's id but not in memory: an earlier
        // process of this node ran it, or this node just claimed it from a node
        // whose lease lapsed: re-run when replayable, else fail. Owned by another node: serve it.
        if (record.state === "running") {
          const ownership = await cluster.ownership(sessionId);
          if (ownership?.nodeId === cluster.nodeId) {
            // Its writes (the re-run's journal too) carry the epoch this node holds: if another node claims it meanwhile, they are refused.
            live.ownerEpoch = ownership.epoch;
            await this.#interrupted(live);
          } else live.role = "mirror";
        }
        // Changes committed between the first read and the subscription.
        await live.syncFromStore();
      } catch (error) {
        // A store failure: a re-run already launched goes on, and its copy stays (a later attempt
        // finds it, rather than running the session a second time); any other copy is dropped.
        if (live.running) this.#live.set(sessionId, live);
        else live.unfollow();
        throw error;
      }
    }
    this.#live.set(sessionId, live);
    return live;
  }

  /** A finished session, or a mirror of one another node runs, leaves memory with its last attachment. */
  evictIfIdle(live: LiveSession): void {
    if ((live.finished || live.role === "mirror") && live.attachment === undefined && this.#live.get(live.sessionId) === live) {
      this.#live.delete(live.sessionId);
      live.unfollow();
    }
  }

  /** Forgets `live` (superseded by a copy loaded afresh), whatever its state. */
  forget(live: LiveSession): void {
    if (this.#live.get(live.sessionId) !== live) return;
    this.#live.delete(live.sessionId);
    live.unfollow();
  }

  /** A session loaded only to answer a refused attempt does not stay in memory. */
  async evictOnFailure<T>(live: LiveSession, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      this.evictIfIdle(live);
      throw error;
    }
  }

  /**
   * Runs `work` after every earlier attach decision of the session has
   * settled. Which attachment owns a session, and which generation and token
   * it holds, is decided here one attempt at a time: without it an exact
   * replay could read the committed attempt while the attach that committed
   * it has not yet moved `live.record` to its generation, and answer with the
   * previous generation's token: the client's own attach would be revoked.
   * Only the decision is queued; sending the acceptance happens after it,
   * outside the queue, so a slow transport holds no other attempt back.
   */
  exclusive<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.#attachQueues.get(sessionId) ?? Promise.resolve();
    const result = previous.then(work, work);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.#attachQueues.set(sessionId, tail);
    void tail.then(() => {
      if (this.#attachQueues.get(sessionId) === tail) this.#attachQueues.delete(sessionId);
    });
    return result;
  }

  /** A new attachment of `live`, observed; its end may evict the session. */
  newAttachment(
    live: LiveSession,
    attemptId: string,
    generation: bigint,
    transport: SessionTransport,
    operation: AttachOperation,
  ): Attachment {
    const observed = this.#deps.observer.attached({ operation, session: identityOf(live.record), generation });
    return new Attachment(live, attemptId, generation, transport, () => this.evictIfIdle(live), observed);
  }

  /** Stops every session in memory without recording anything, and forgets them. */
  abortAll(): void {
    for (const live of this.#live.values()) {
      live.abortForShutdown();
      live.unfollow();
    }
    this.#live.clear();
  }
}

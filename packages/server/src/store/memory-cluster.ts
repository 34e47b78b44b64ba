/**
 * A cluster in one process: several `ClusterSessionStore` views (one per
 * node) over one `MemorySessionStore`, with ownership, leases and the
 * change feed kept in memory. For tests of the cluster runtime without a
 * database (two `createSessionServer`s in one process), and as the
 * reference the PostgreSQL store's cluster behaviour is compared with.
 *
 * Changes are delivered after the write resolves, on a later turn, in
 * commit order, to every node's subscribers, as a database's notifications
 * would be.
 */
import type {
  ClusterSessionStore,
  HeartbeatReport,
  NodeCatalogue,
  Ownership,
  SessionChange,
  SessionChangeListener,
} from "./cluster-store.js";
import { MemorySessionStore } from "./memory-store.js";
import type {
  AttachResult,
  AttemptRecord,
  CreateSessionResult,
  InputChunk,
  InputTerminal,
  JournalEntry,
  NewStream,
  OutputEvent,
  RecordedRun,
  SessionRecord,
  StoredBytes,
  StreamRecord,
} from "./session-store.js";

export class MemoryCluster {
  readonly store = new MemorySessionStore();
  readonly owners = new Map<string, string>();
  /** Lease expiry per node, ms since the epoch. */
  readonly leases = new Map<string, number>();
  /** The catalogue fingerprint each node recorded. */
  readonly catalogues = new Map<string, string>();
  /** Which node store (process) last heartbeated with each node id. */
  readonly heartbeaters = new Map<string, object>();
  readonly #listeners = new Map<string, Set<SessionChangeListener>>();
  /** Deliveries in order: each runs after the previous, on a later turn. */
  #delivery: Promise<void> = Promise.resolve();
  readonly now: () => number;

  constructor(now: () => number = Date.now) {
    this.now = now;
  }

  node(nodeId: string): ClusterSessionStore {
    return new MemoryClusterNode(this, nodeId);
  }

  publish(sessionId: string, change: SessionChange): void {
    this.#delivery = this.#delivery.then(
      () =>
        new Promise<void>((resolve) => {
          setImmediate(() => {
            for (const listener of [...(this.#listeners.get(sessionId) ?? [])]) listener(change);
            resolve();
          });
        }),
    );
  }

  subscribe(sessionId: string, listener: SessionChangeListener): () => void {
    let set = this.#listeners.get(sessionId);
    if (set === undefined) this.#listeners.set(sessionId, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.#listeners.delete(sessionId);
    };
  }
}

class MemoryClusterNode implements ClusterSessionStore {
  readonly nodeId: string;
  readonly #cluster: MemoryCluster;
  /** This store has heartbeated before (`HeartbeatReport.otherProcess` is about later ones). */
  #beaten = false;

  constructor(cluster: MemoryCluster, nodeId: string) {
    this.#cluster = cluster;
    this.nodeId = nodeId;
  }

  get #store(): MemorySessionStore {
    return this.#cluster.store;
  }

  async #publishing<T>(sessionId: string | Promise<string | undefined>, change: SessionChange, write: () => Promise<T>): Promise<T> {
    const result = await write();
    const id = await sessionId;
    if (id !== undefined) this.#cluster.publish(id, change);
    return result;
  }

  async #sessionOf(streamId: string): Promise<string | undefined> {
    return (await this.#store.getStream(streamId))?.sessionId;
  }

  async createSession(session: SessionRecord, streams: readonly NewStream[], attempt: AttemptRecord): Promise<CreateSessionResult> {
    const created = await this.#store.createSession(session, streams, attempt);
    if (created.kind === "created") this.#cluster.owners.set(session.sessionId, this.nodeId);
    return created;
  }

  getAttempt(attemptId: string): Promise<AttemptRecord | undefined> {
    return this.#store.getAttempt(attemptId);
  }

  getSession(sessionId: string): Promise<SessionRecord | undefined> {
    return this.#store.getSession(sessionId);
  }

  listStreams(sessionId: string): Promise<StreamRecord[]> {
    return this.#store.listStreams(sessionId);
  }

  getStream(streamId: string): Promise<StreamRecord | undefined> {
    return this.#store.getStream(streamId);
  }

  async attach(attempt: AttemptRecord, sessionToken: string, expectedGeneration: bigint | undefined): Promise<AttachResult> {
    const attached = await this.#store.attach(attempt, sessionToken, expectedGeneration);
    if (attached.kind === "attached")
      this.#cluster.publish(attempt.sessionId, { kind: "attached", generation: String(attached.generation) });
    return attached;
  }

  acceptInput(chunk: InputChunk, introduced: readonly NewStream[], epoch?: bigint): Promise<void> {
    return this.#publishing(this.#sessionOf(chunk.streamId), { kind: "input", streamId: chunk.streamId }, () =>
      this.#store.acceptInput(chunk, introduced, epoch),
    );
  }

  readInput(streamId: string, from: bigint, to: bigint): Promise<InputChunk[]> {
    return this.#store.readInput(streamId, from, to);
  }

  endInput(streamId: string, terminal: InputTerminal, epoch?: bigint, count?: bigint): Promise<void> {
    return this.#publishing(this.#sessionOf(streamId), { kind: "input", streamId }, () =>
      this.#store.endInput(streamId, terminal, epoch, count),
    );
  }

  appendOutput(event: OutputEvent, introduced: readonly NewStream[], epoch?: bigint): Promise<void> {
    return this.#publishing(this.#sessionOf(event.streamId), { kind: "output", streamId: event.streamId }, () =>
      this.#store.appendOutput(event, introduced, epoch),
    );
  }

  readOutput(streamId: string, from: bigint, limit: number, maxBytes?: number): Promise<OutputEvent[]> {
    return this.#store.readOutput(streamId, from, limit, maxBytes);
  }

  setResult(sessionId: string, result: string, introduced: readonly NewStream[], epoch?: bigint): Promise<void> {
    return this.#publishing(sessionId, { kind: "result" }, () => this.#store.setResult(sessionId, result, introduced, epoch));
  }

  finish(sessionId: string, outcome: string, at: number, epoch?: bigint): Promise<void> {
    return this.#publishing(sessionId, { kind: "finished" }, () => this.#store.finish(sessionId, outcome, at, epoch));
  }

  listRunningSessions(): Promise<SessionRecord[]> {
    return this.#store.listRunningSessions();
  }

  appendJournal(entry: JournalEntry, epoch?: bigint): Promise<void> {
    return this.#store.appendJournal(entry, epoch);
  }

  readJournal(sessionId: string): Promise<JournalEntry[]> {
    return this.#store.readJournal(sessionId);
  }

  recordRun(sessionId: string, epoch?: bigint, progress?: bigint): Promise<RecordedRun> {
    return this.#store.recordRun(sessionId, epoch, progress);
  }

  recordHandOver(sessionId: string, epoch?: bigint): Promise<void> {
    return this.#store.recordHandOver(sessionId, epoch);
  }

  purgeFinished(finishedBefore: number, now: number, tombstonesBefore: number): Promise<number> {
    return this.#store.purgeFinished(finishedBefore, now, tombstonesBefore);
  }

  storedBytesByPrincipal(finishedBefore?: number): Promise<StoredBytes[]> {
    return this.#store.storedBytesByPrincipal(finishedBefore);
  }

  async close(): Promise<void> {}

  async ownerOf(sessionId: string): Promise<string | undefined> {
    return (await this.#store.getSession(sessionId)) === undefined ? undefined : this.#cluster.owners.get(sessionId);
  }

  async ownership(sessionId: string): Promise<Ownership | undefined> {
    const owner = await this.ownerOf(sessionId);
    return owner === undefined ? undefined : { nodeId: owner, epoch: this.#store.epochOf(sessionId) };
  }

  async heartbeat(ttlMs: number): Promise<HeartbeatReport> {
    this.#cluster.leases.set(this.nodeId, this.#cluster.now() + ttlMs);
    const previous = this.#cluster.heartbeaters.get(this.nodeId);
    this.#cluster.heartbeaters.set(this.nodeId, this);
    const otherProcess = this.#beaten && previous !== undefined && previous !== this;
    this.#beaten = true;
    return { otherProcess };
  }

  async claimOrphans(): Promise<string[]> {
    const now = this.#cluster.now();
    if ((this.#cluster.leases.get(this.nodeId) ?? 0) <= now) return [];
    const claimed: string[] = [];
    for (const session of await this.#store.listRunningSessions()) {
      const owner = this.#cluster.owners.get(session.sessionId);
      if (owner !== undefined && (this.#cluster.leases.get(owner) ?? 0) > now) continue;
      this.#cluster.owners.set(session.sessionId, this.nodeId);
      this.#store.claim(session.sessionId);
      claimed.push(session.sessionId);
    }
    return claimed;
  }

  async reclaim(sessionId: string): Promise<bigint | undefined> {
    const session = await this.#store.getSession(sessionId);
    if (session?.state !== "running" || this.#cluster.owners.get(sessionId) !== this.nodeId) return undefined;
    return this.#store.claim(sessionId);
  }

  async leave(): Promise<void> {
    this.#cluster.leases.delete(this.nodeId);
    this.#cluster.catalogues.delete(this.nodeId);
    // As PostgreSQL's leave deletes the node's row, the last renewer's incarnation with it: a
    // process left with this id finds nobody else's renewal at its next heartbeat.
    this.#cluster.heartbeaters.delete(this.nodeId);
  }

  async setCatalogue(fingerprint: string): Promise<void> {
    this.#cluster.catalogues.set(this.nodeId, fingerprint);
  }

  async liveCatalogues(): Promise<readonly NodeCatalogue[]> {
    const now = this.#cluster.now();
    return [...this.#cluster.leases]
      .filter(([nodeId, expires]) => nodeId !== this.nodeId && expires > now)
      .map(([nodeId]) => ({ nodeId, fingerprint: this.#cluster.catalogues.get(nodeId) }));
  }

  subscribe(sessionId: string, listener: SessionChangeListener): () => void {
    return this.#cluster.subscribe(sessionId, listener);
  }

  async publish(sessionId: string, change: SessionChange): Promise<void> {
    this.#cluster.publish(sessionId, change);
  }
}

/**
 * A `SessionStore` in memory: the same contract as the SQLite store, without
 * durability. For tests and for ephemeral deployments that accept losing
 * every session with the process. Records are copied in and out so callers
 * can never alias stored state.
 */
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
  SessionStore,
  StoredBytes,
  StreamRecord,
} from "./session-store.js";
import { FIRST_EPOCH, OwnershipLostError } from "./ownership.js";
import { ATTEMPT_RECORD_BYTES, sessionRecordBytes } from "./record-bytes.js";

type MutableStream = { -readonly [K in keyof StreamRecord]: StreamRecord[K] };
type MutableSession = { -readonly [K in keyof SessionRecord]: SessionRecord[K] };

function copyBytes<T extends { data: Uint8Array }>(value: T): T {
  return { ...value, data: value.data.slice() };
}

export class MemorySessionStore implements SessionStore {
  readonly #sessions = new Map<string, MutableSession>();
  readonly #attempts = new Map<string, AttemptRecord>();
  readonly #streams = new Map<string, MutableStream>();
  readonly #streamsBySession = new Map<string, string[]>();
  readonly #idempotency = new Map<string, string>();
  readonly #input = new Map<string, InputChunk[]>();
  readonly #output = new Map<string, OutputEvent[]>();
  /** Tombstones of purged sessions: attempt ids and idempotency keys, with when they were stamped. */
  readonly #attemptTombstones = new Map<string, number>();
  readonly #idempotencyTombstones = new Map<string, number>();
  /** Journal entries by session, by position; and the recorded run counts (durable-execution.md). */
  readonly #journals = new Map<string, Map<number, JournalEntry>>();
  /** With the progress the last re-run found (`recordRun`). */
  readonly #runs = new Map<string, RecordedRun & { readonly progress: bigint }>();
  /** Ownership epochs (ownership.ts) of the sessions a cluster claimed; every other session is at `FIRST_EPOCH`. */
  readonly #epochs = new Map<string, bigint>();

  #idempotencyKey(s: SessionRecord): string {
    return JSON.stringify([s.account, s.application, s.environment, s.agentType, s.agentIdentity, s.idempotencyKey]);
  }

  /** The session's ownership epoch. */
  epochOf(sessionId: string): bigint {
    return this.#epochs.get(sessionId) ?? FIRST_EPOCH;
  }

  /** Moves the session to its next ownership epoch (a cluster's claim, memory-cluster.ts); returns it. */
  claim(sessionId: string): bigint {
    const next = this.epochOf(sessionId) + 1n;
    this.#epochs.set(sessionId, next);
    return next;
  }

  /** Refuses a write whose epoch is not the session's (checked in the same turn as the write it guards). */
  #fence(sessionId: string | undefined, epoch: bigint | undefined): void {
    if (epoch === undefined || sessionId === undefined) return;
    const current = this.epochOf(sessionId);
    if (current !== epoch) throw new OwnershipLostError(sessionId, epoch, current);
  }

  #addStreams(streams: readonly NewStream[]): void {
    for (const stream of streams) {
      const ids = this.#streamsBySession.get(stream.sessionId) ?? [];
      this.#streams.set(stream.streamId, { ...stream, ordinal: ids.length, count: 0n, inputTerminal: undefined, outputTerminal: false });
      ids.push(stream.streamId);
      this.#streamsBySession.set(stream.sessionId, ids);
    }
  }

  async createSession(session: SessionRecord, streams: readonly NewStream[], attempt: AttemptRecord): Promise<CreateSessionResult> {
    if (this.#attempts.has(attempt.attemptId)) return { kind: "attempt-exists" };
    const key = this.#idempotencyKey(session);
    if (this.#attemptTombstones.has(attempt.attemptId) || this.#idempotencyTombstones.has(key)) return { kind: "purged" };
    if (this.#idempotency.has(key)) return { kind: "idempotency-conflict" };
    this.#sessions.set(session.sessionId, { ...session });
    this.#idempotency.set(key, session.sessionId);
    this.#attempts.set(attempt.attemptId, { ...attempt });
    this.#addStreams(streams);
    return { kind: "created" };
  }

  async getAttempt(attemptId: string): Promise<AttemptRecord | undefined> {
    const attempt = this.#attempts.get(attemptId);
    return attempt === undefined ? undefined : { ...attempt };
  }

  async getSession(sessionId: string): Promise<SessionRecord | undefined> {
    const session = this.#sessions.get(sessionId);
    return session === undefined ? undefined : { ...session };
  }

  async listStreams(sessionId: string): Promise<StreamRecord[]> {
    return (this.#streamsBySession.get(sessionId) ?? []).flatMap((id) => {
      const stream = this.#streams.get(id);
      return stream === undefined ? [] : [{ ...stream }];
    });
  }

  async getStream(streamId: string): Promise<StreamRecord | undefined> {
    const stream = this.#streams.get(streamId);
    return stream === undefined ? undefined : { ...stream };
  }

  async attach(attempt: AttemptRecord, sessionToken: string, expectedGeneration: bigint | undefined): Promise<AttachResult> {
    if (this.#attempts.has(attempt.attemptId)) return { kind: "attempt-exists" };
    const session = this.#sessions.get(attempt.sessionId);
    if (session === undefined) return { kind: "superseded" };
    if (expectedGeneration !== undefined && session.generation !== expectedGeneration) return { kind: "superseded" };
    if (attempt.generation !== session.generation + 1n) return { kind: "superseded" };
    session.generation = attempt.generation;
    session.sessionToken = sessionToken;
    this.#attempts.set(attempt.attemptId, { ...attempt });
    return { kind: "attached", generation: attempt.generation };
  }

  async acceptInput(chunk: InputChunk, introduced: readonly NewStream[], epoch?: bigint): Promise<void> {
    const stream = this.#streams.get(chunk.streamId);
    this.#fence(stream?.sessionId, epoch);
    if (stream === undefined || stream.direction !== "input" || stream.inputTerminal !== undefined || stream.count !== chunk.sequence) {
      throw new Error("input chunk does not continue the stream");
    }
    stream.count += chunk.itemCount;
    const chunks = this.#input.get(chunk.streamId) ?? [];
    chunks.push(copyBytes(chunk));
    this.#input.set(chunk.streamId, chunks);
    this.#addStreams(introduced);
  }

  async readInput(streamId: string, from: bigint, to: bigint): Promise<InputChunk[]> {
    const chunks = this.#input.get(streamId) ?? [];
    // Chunks continue one another in sequence order: binary search for the first that ends after
    // `from` (a resend's duplicate check reads near the end of the stream, not from its start).
    let low = 0;
    let high = chunks.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      const chunk = chunks[middle] as InputChunk;
      if (chunk.sequence + chunk.itemCount > from) high = middle;
      else low = middle + 1;
    }
    const found: InputChunk[] = [];
    for (let at = low; at < chunks.length && (chunks[at] as InputChunk).sequence < to; at++)
      found.push(copyBytes(chunks[at] as InputChunk));
    return found;
  }

  async endInput(streamId: string, terminal: InputTerminal, epoch?: bigint, count?: bigint): Promise<void> {
    const stream = this.#streams.get(streamId);
    this.#fence(stream?.sessionId, epoch);
    if (stream === undefined || stream.inputTerminal !== undefined) return;
    if (count !== undefined && stream.count !== count) throw new Error("input end does not follow the stream's items");
    stream.inputTerminal = terminal;
  }

  async appendOutput(event: OutputEvent, introduced: readonly NewStream[], epoch?: bigint): Promise<void> {
    const stream = this.#streams.get(event.streamId);
    this.#fence(stream?.sessionId, epoch);
    if (stream === undefined || stream.direction !== "output" || stream.outputTerminal || stream.count !== event.sequence) {
      throw new Error("output event does not continue the stream");
    }
    if (event.event === "item") stream.count += event.itemCount;
    else stream.outputTerminal = true;
    const events = this.#output.get(event.streamId) ?? [];
    events.push(event.event === "item" ? copyBytes(event) : { ...event });
    this.#output.set(event.streamId, events);
    this.#addStreams(introduced);
  }

  async readOutput(streamId: string, from: bigint, limit: number, maxBytes = Number.POSITIVE_INFINITY): Promise<OutputEvent[]> {
    const events: OutputEvent[] = [];
    let bytes = 0;
    for (const e of this.#output.get(streamId) ?? []) {
      if (e.sequence < from) continue;
      if (events.length === limit || bytes >= maxBytes) break;
      events.push(e.event === "item" ? copyBytes(e) : { ...e });
      if (e.event === "item") bytes += e.data.length;
    }
    return events;
  }

  async setResult(sessionId: string, result: string, introduced: readonly NewStream[], epoch?: bigint): Promise<void> {
    this.#fence(sessionId, epoch);
    const session = this.#sessions.get(sessionId);
    if (session === undefined || session.result !== undefined) throw new Error("the invocation result was already recorded");
    session.result = result;
    this.#addStreams(introduced);
  }

  async finish(sessionId: string, outcome: string, at: number, epoch?: bigint): Promise<void> {
    this.#fence(sessionId, epoch);
    const session = this.#sessions.get(sessionId);
    if (session === undefined || session.state !== "running") return;
    session.state = "finished";
    session.outcome = outcome;
    session.finishedAt = at;
  }

  async listRunningSessions(): Promise<SessionRecord[]> {
    return [...this.#sessions.values()].filter((s) => s.state === "running").map((s) => ({ ...s }));
  }

  async appendJournal(entry: JournalEntry, epoch?: bigint): Promise<void> {
    this.#fence(entry.sessionId, epoch);
    const journal = this.#journals.get(entry.sessionId) ?? new Map<number, JournalEntry>();
    const taken = journal.get(entry.position);
    // The same entry again is a write retried after it took effect: done (session-store.ts).
    if (taken !== undefined) {
      if (taken.name === entry.name && taken.outcome === entry.outcome) return;
      throw new Error("the journal position is already taken");
    }
    if (this.#sessions.get(entry.sessionId)?.state !== "running") throw new Error("the session is not running");
    journal.set(entry.position, { ...entry });
    this.#journals.set(entry.sessionId, journal);
  }

  async readJournal(sessionId: string): Promise<JournalEntry[]> {
    return [...(this.#journals.get(sessionId)?.values() ?? [])].sort((a, b) => a.position - b.position).map((entry) => ({ ...entry }));
  }

  async recordRun(sessionId: string, epoch?: bigint, progress?: bigint): Promise<RecordedRun> {
    this.#fence(sessionId, epoch);
    if (this.#sessions.get(sessionId)?.state !== "running") throw new Error("the session is not running");
    const before = this.#runs.get(sessionId) ?? { run: 1, withoutProgress: 0, progress: 0n };
    const progressed = progress !== undefined && progress > before.progress;
    const next = {
      run: before.run + 1,
      withoutProgress: progressed ? 0 : before.withoutProgress + 1,
      progress: progressed ? progress : before.progress,
    };
    this.#runs.set(sessionId, next);
    return { run: next.run, withoutProgress: next.withoutProgress };
  }

  async recordHandOver(sessionId: string, epoch?: bigint): Promise<void> {
    this.#fence(sessionId, epoch);
    if (this.#sessions.get(sessionId)?.state !== "running") throw new Error("the session is not running");
    // A progress below any a re-run measures: the next re-run finds progress.
    const before = this.#runs.get(sessionId) ?? { run: 1, withoutProgress: 0, progress: 0n };
    this.#runs.set(sessionId, { run: before.run, withoutProgress: 0, progress: -1n });
  }

  async purgeFinished(finishedBefore: number, now: number, tombstonesBefore: number): Promise<number> {
    for (const tombstones of [this.#attemptTombstones, this.#idempotencyTombstones]) {
      for (const [key, stamped] of tombstones) if (stamped < tombstonesBefore) tombstones.delete(key);
    }
    let purged = 0;
    for (const session of [...this.#sessions.values()]) {
      if (session.state !== "finished" || session.finishedAt === undefined || session.finishedAt >= finishedBefore) continue;
      for (const id of this.#streamsBySession.get(session.sessionId) ?? []) {
        this.#streams.delete(id);
        this.#input.delete(id);
        this.#output.delete(id);
      }
      this.#streamsBySession.delete(session.sessionId);
      this.#journals.delete(session.sessionId);
      this.#runs.delete(session.sessionId);
      for (const [id, attempt] of this.#attempts) {
        if (attempt.sessionId !== session.sessionId) continue;
        this.#attempts.delete(id);
        this.#attemptTombstones.set(id, now);
      }
      this.#idempotency.delete(this.#idempotencyKey(session));
      this.#idempotencyTombstones.set(this.#idempotencyKey(session), now);
      this.#sessions.delete(session.sessionId);
      this.#epochs.delete(session.sessionId);
      purged++;
    }
    return purged;
  }

  async storedBytesByPrincipal(finishedBefore?: number): Promise<StoredBytes[]> {
    const totals = new Map<string, StoredBytes>();
    const attempts = new Map<string, number>();
    for (const attempt of this.#attempts.values()) attempts.set(attempt.sessionId, (attempts.get(attempt.sessionId) ?? 0) + 1);
    for (const session of this.#sessions.values()) {
      if (
        finishedBefore !== undefined &&
        !(session.state === "finished" && session.finishedAt !== undefined && session.finishedAt < finishedBefore)
      )
        continue;
      let bytes = sessionRecordBytes(session) + ATTEMPT_RECORD_BYTES * (attempts.get(session.sessionId) ?? 0);
      for (const id of this.#streamsBySession.get(session.sessionId) ?? []) {
        for (const chunk of this.#input.get(id) ?? []) bytes += chunk.data.length;
        for (const event of this.#output.get(id) ?? []) if (event.event === "item") bytes += event.data.length;
      }
      const key = JSON.stringify([session.account, session.principal]);
      const sum = totals.get(key);
      totals.set(key, { account: session.account, principal: session.principal, bytes: (sum?.bytes ?? 0) + bytes });
    }
    return [...totals.values()];
  }

  async close(): Promise<void> {}
}

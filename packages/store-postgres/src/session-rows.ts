/**
 * Sessions, their attempts and their streams' rows: creating a session with
 * its parameter streams and start attempt, attaching (a resume or takeover
 * moves the generation), recording the result and the outcome, inserting the
 * streams a write introduces, and the attempt and stream reads. The idempotency and attempt checks run inside
 * the write, so two nodes racing on one key get one answer each.
 */
import type { AttachResult, AttemptRecord, CreateSessionResult, NewStream, SessionRecord, StreamRecord } from "@golem-stream/server/store";
import { encodeNote } from "./change-feed.js";
import { checkEpoch } from "./fencing.js";
import { toAttempt, toStream, type AttemptRow, type StreamRow } from "./rows.js";
import type { StoreContext } from "./store-context.js";
import { Rollback, type WriteContext } from "./write-queue.js";

/** Inserts `streams`, each at its session's next ordinal and epoch. */
export async function insertStreams(store: StoreContext, tx: WriteContext, streams: readonly NewStream[]): Promise<void> {
  if (streams.length === 0) return;
  // Ordinals are per session: lock its row so two nodes cannot take the same one.
  const sessions = [...new Set(streams.map((s) => s.sessionId))];
  await tx.query(store.sql.lockSessions, [sessions]);
  for (const stream of streams) {
    const parent = stream.parent;
    await tx.query(store.sql.insertStream, [
      stream.streamId,
      stream.sessionId,
      stream.direction,
      stream.elementKind,
      stream.elementGraph,
      stream.coordinate,
      stream.provisionalRef ?? null,
      parent.kind,
      parent.kind === "item" ? parent.streamId : null,
      parent.kind === "item" ? parent.sequence : null,
      stream.token,
    ]);
  }
}

export function createSession(
  store: StoreContext,
  session: SessionRecord,
  streams: readonly NewStream[],
  attempt: AttemptRecord,
): Promise<CreateSessionResult> {
  const sql = store.sql;
  return store.write(async (tx) => {
    const check = async (): Promise<CreateSessionResult["kind"] | null> => {
      const checked = await tx.query<{ verdict: CreateSessionResult["kind"] | null }>(sql.createCheck, [
        attempt.attemptId,
        session.account,
        session.application,
        session.environment,
        session.agentType,
        session.agentIdentity,
        session.idempotencyKey,
      ]);
      return checked.rows[0]?.verdict ?? null;
    };
    const verdict = await check();
    if (verdict !== null) return { kind: verdict } as CreateSessionResult;
    const inserted = await tx.query(sql.insertSession, [
      session.sessionId,
      session.account,
      session.principal,
      session.application,
      session.environment,
      session.agentType,
      session.agentIdentity,
      session.method,
      session.idempotencyKey,
      session.selector,
      session.config,
      session.parameters,
      session.generation,
      session.sessionToken,
      session.streamKeyId,
      session.state,
      session.result ?? null,
      session.outcome ?? null,
      session.createdAt,
      session.finishedAt ?? null,
      store.nodeId,
    ]);
    // Another node bound the key between the check and the insert: the insert waited for its
    // commit. Often with this very attempt (a client's exact retry racing its original at
    // another node), which must be answered as a replay: check again (read committed, so this
    // statement sees that commit).
    if (inserted.rowCount !== 1) return { kind: (await check()) ?? "idempotency-conflict" } as CreateSessionResult;
    const attempted = await tx.query(sql.insertAttempt, [
      attempt.attemptId,
      attempt.operation,
      attempt.descriptorDigest,
      attempt.sessionId,
      attempt.generation,
    ]);
    if (attempted.rowCount !== 1) throw new Rollback<CreateSessionResult>({ kind: "attempt-exists" });
    await insertStreams(store, tx, streams);
    return { kind: "created" } as CreateSessionResult;
  });
}

export function attach(
  store: StoreContext,
  attempt: AttemptRecord,
  sessionToken: string,
  expectedGeneration: bigint | undefined,
): Promise<AttachResult> {
  const sql = store.sql;
  return store.write(async (tx): Promise<AttachResult> => {
    const exists = await tx.query(sql.getAttempt, [attempt.attemptId]);
    if (exists.rowCount !== 0) return { kind: "attempt-exists" };
    const current = await tx.query<{ generation: string }>(sql.lockGeneration, [attempt.sessionId]);
    const row = current.rows[0];
    if (row === undefined) return { kind: "superseded" };
    const generation = BigInt(row.generation);
    if (expectedGeneration !== undefined && generation !== expectedGeneration) return { kind: "superseded" };
    if (attempt.generation !== generation + 1n) return { kind: "superseded" };
    await tx.query(sql.attach, [attempt.generation, sessionToken, attempt.sessionId]);
    const attempted = await tx.query(sql.insertAttempt, [
      attempt.attemptId,
      attempt.operation,
      attempt.descriptorDigest,
      attempt.sessionId,
      attempt.generation,
    ]);
    if (attempted.rowCount !== 1) throw new Rollback<AttachResult>({ kind: "attempt-exists" });
    tx.notify(encodeNote(attempt.sessionId, { kind: "attached", generation: attempt.generation.toString() }));
    return { kind: "attached", generation: attempt.generation };
  });
}

/** Records the result once; an owner's write (`epoch`) only at its epoch. */
export function setResult(
  store: StoreContext,
  sessionId: string,
  result: string,
  introduced: readonly NewStream[],
  epoch?: bigint,
): Promise<void> {
  return store.write(async (tx) => {
    await recordResult(store, tx, sessionId, result, epoch);
    await insertStreams(store, tx, introduced);
    tx.notify(encodeNote(sessionId, { kind: "result" }));
  });
}

/** `setResult` (no stream introduced) and `finish` in one write: both or neither, notified in that order. */
export function finishWithResult(
  store: StoreContext,
  sessionId: string,
  result: string,
  outcome: string,
  at: number,
  epoch?: bigint,
): Promise<void> {
  return store.write(async (tx) => {
    await recordResult(store, tx, sessionId, result, epoch);
    const finished = await tx.query(store.sql.finish, [outcome, at, sessionId, epoch ?? null]);
    tx.notify(encodeNote(sessionId, { kind: "result" }));
    if (finished.rowCount === 1) tx.notify(encodeNote(sessionId, { kind: "finished" }));
  });
}

/** The result's row, or the refusal of a stale epoch or of a second result (the write then rolls back). */
async function recordResult(
  store: StoreContext,
  tx: WriteContext,
  sessionId: string,
  result: string,
  epoch: bigint | undefined,
): Promise<void> {
  const set = await tx.query(store.sql.setResult, [result, sessionId, epoch ?? null]);
  if (set.rowCount === 1) return;
  await checkEpoch(tx, store.sql.sessionEpoch, sessionId, epoch);
  throw new Error("the invocation result was already recorded");
}

export function finish(store: StoreContext, sessionId: string, outcome: string, at: number, epoch?: bigint): Promise<void> {
  const sql = store.sql;
  return store.write(async (tx) => {
    const finished = await tx.query(sql.finish, [outcome, at, sessionId, epoch ?? null]);
    // No row: finished already (nothing to do), or the epoch is stale (refused).
    if (finished.rowCount === 1) tx.notify(encodeNote(sessionId, { kind: "finished" }));
    else await checkEpoch(tx, sql.sessionEpoch, sessionId, epoch);
  });
}

export async function getAttempt(store: StoreContext, attemptId: string): Promise<AttemptRecord | undefined> {
  const [row] = await store.read<AttemptRow>(store.sql.getAttempt, [attemptId]);
  return row === undefined ? undefined : toAttempt(row);
}

export async function getStream(store: StoreContext, streamId: string): Promise<StreamRecord | undefined> {
  const [row] = await store.read<StreamRow>(store.sql.getStream, [streamId]);
  return row === undefined ? undefined : toStream(row);
}

/**
 * A run of appends of one stream inside the writer's transaction
 * (`write-queue.ts`): one statement that advances the stream's count by the
 * run's items and inserts its rows (`append-runs.ts`), in a savepoint of its
 * own so a run that cannot be written rolls back alone.
 */
import type pg from "pg";
import { runRows } from "./append-runs.js";
import type { ControlStatements } from "./control-statements.js";
import type { LogAppend, RunStatements } from "./writes.js";

/**
 * Writes a run of appends in one statement inside one savepoint. False
 * (and nothing written) when the stream does not continue where the run
 * starts: the caller then writes them one by one for their own outcomes.
 * `gone(error)` says whether the statement's failure lost the connection
 * (then it is thrown: the whole group fails).
 */
export async function writeRun(
  client: pg.Client,
  control: ControlStatements,
  statements: RunStatements,
  appends: readonly LogAppend[],
  notes: string[],
  gone: (error: unknown) => boolean,
): Promise<boolean> {
  const first = appends[0]!;
  const total = appends.reduce((sum, append) => sum + append.itemCount, 0n);
  const rows = runRows(appends, statements.packedRowBytes());
  await control.send("SAVEPOINT run");
  try {
    const moved = await client.query<{ session_id: string }>(first.log === "input" ? statements.input : statements.output, [
      total,
      first.streamId,
      first.sequence,
      rows.map((row) => row.sequence.toString()),
      rows.map((row) => row.itemCount.toString()),
      rows.map((row) => Buffer.from(row.data.buffer, row.data.byteOffset, row.data.byteLength)),
      rows.map((row) => row.mimeType ?? null),
      rows.map((row) => (row.parts === undefined ? null : Buffer.from(row.parts.buffer, row.parts.byteOffset, row.parts.byteLength))),
      first.epoch === undefined ? null : first.epoch.toString(),
    ]);
    const sessionId = moved.rows[0]?.session_id;
    if (sessionId === undefined) {
      await control.send("ROLLBACK TO SAVEPOINT run; RELEASE SAVEPOINT run");
      return false;
    }
    control.hold("RELEASE SAVEPOINT run");
    notes.push(first.note(sessionId));
    return true;
  } catch (error) {
    if (gone(error)) throw error;
    await control.send("ROLLBACK TO SAVEPOINT run; RELEASE SAVEPOINT run");
    // Deadlocks and other failures: the writes go one by one, with their own savepoints and retries.
    return false;
  }
}

/**
 * The input and output logs: appending a chunk or an item at a stream's end
 * (and, for one that introduces no stream, the `LogAppend` the writer may
 * write in a run or a group statement instead: `write-queue.ts`), ending a
 * stream, and reading a log back from a sequence. A log only grows at its
 * end, never past its terminal, and an owner's append only at its epoch.
 */
import type { InputChunk, InputTerminal, NewStream, OutputEvent } from "@golem-stream/server/store";
import { encodeNote } from "./change-feed.js";
import { checkEpoch, refusal } from "./fencing.js";
import { encodeInputTerminal, eventsFrom, pushChunks, type InputRow, type OutputRow } from "./rows.js";
import { insertStreams } from "./session-rows.js";
import type { StoreContext } from "./store-context.js";

export function acceptInput(store: StoreContext, chunk: InputChunk, introduced: readonly NewStream[], epoch?: bigint): Promise<void> {
  const sql = store.sql;
  return store.write(
    async (tx) => {
      const moved = await tx.query<{ session_id: string }>(sql.advanceInput, [
        chunk.itemCount,
        chunk.streamId,
        chunk.sequence,
        epoch ?? null,
      ]);
      const sessionId = moved.rows[0]?.session_id;
      if (sessionId === undefined) throw await refusal(tx, sql, chunk.streamId, epoch, "input chunk does not continue the stream");
      await tx.query(sql.insertInput, [chunk.streamId, chunk.sequence, chunk.itemCount, chunk.data, chunk.mimeType ?? null]);
      await insertStreams(store, tx, introduced);
      tx.notify(encodeNote(sessionId, { kind: "input", streamId: chunk.streamId }));
    },
    introduced.length > 0
      ? undefined
      : {
          log: "input",
          streamId: chunk.streamId,
          sequence: chunk.sequence,
          itemCount: chunk.itemCount,
          data: chunk.data,
          mimeType: chunk.mimeType,
          epoch,
          note: (sessionId: string) => encodeNote(sessionId, { kind: "input", streamId: chunk.streamId }),
        },
  );
}

export async function readInput(store: StoreContext, streamId: string, from: bigint, to: bigint): Promise<InputChunk[]> {
  const chunks: InputChunk[] = [];
  for (const row of await store.read<InputRow>(store.sql.readInput, [streamId, to, from])) pushChunks(row, from, to, chunks);
  return chunks;
}

export function endInput(store: StoreContext, streamId: string, terminal: InputTerminal, epoch?: bigint, count?: bigint): Promise<void> {
  const sql = store.sql;
  return store.write(async (tx) => {
    const ended = await tx.query<{ session_id: string }>(sql.endInput, [
      encodeInputTerminal(terminal),
      streamId,
      epoch ?? null,
      count ?? null,
    ]);
    const sessionId = ended.rows[0]?.session_id;
    if (sessionId !== undefined) {
      tx.notify(encodeNote(sessionId, { kind: "input", streamId }));
      return;
    }
    // No row: the epoch is stale (refused), the input had ended already (nothing to do), or it
    // does not hold `count` items (refused: SessionStore.endInput).
    await checkEpoch(tx, sql.streamEpoch, streamId, epoch);
    if (count === undefined) return;
    const stream = await tx.query<{ ended: boolean }>(sql.inputEnded, [streamId]);
    if (stream.rows[0]?.ended === false) throw new Error("input end does not follow the stream's items");
  });
}

export function appendOutput(store: StoreContext, event: OutputEvent, introduced: readonly NewStream[], epoch?: bigint): Promise<void> {
  const sql = store.sql;
  return store.write(
    async (tx) => {
      let sessionId: string | undefined;
      if (event.event === "item") {
        const moved = await tx.query<{ session_id: string }>(sql.advanceOutput, [
          event.itemCount,
          event.streamId,
          event.sequence,
          epoch ?? null,
        ]);
        sessionId = moved.rows[0]?.session_id;
        if (sessionId === undefined) throw await refusal(tx, sql, event.streamId, epoch, "output event does not continue the stream");
        await tx.query(sql.insertOutput, [
          event.streamId,
          event.sequence,
          "item",
          event.itemCount,
          event.data,
          event.mimeType ?? null,
          null,
        ]);
      } else {
        const ended = await tx.query<{ session_id: string }>(sql.endOutput, [event.streamId, event.sequence, epoch ?? null]);
        sessionId = ended.rows[0]?.session_id;
        if (sessionId === undefined) throw await refusal(tx, sql, event.streamId, epoch, "output terminal does not continue the stream");
        await tx.query(sql.insertOutput, [event.streamId, event.sequence, "terminal", 0, null, null, event.outcome]);
      }
      await insertStreams(store, tx, introduced);
      tx.notify(encodeNote(sessionId, { kind: "output", streamId: event.streamId }));
    },
    event.event !== "item" || introduced.length > 0
      ? undefined
      : {
          log: "output",
          streamId: event.streamId,
          sequence: event.sequence,
          itemCount: event.itemCount,
          data: event.data,
          mimeType: event.mimeType,
          epoch,
          note: (sessionId: string) => encodeNote(sessionId, { kind: "output", streamId: event.streamId }),
        },
  );
}

export async function readOutput(
  store: StoreContext,
  streamId: string,
  from: bigint,
  limit: number,
  maxBytes = Number.POSITIVE_INFINITY,
): Promise<OutputEvent[]> {
  if (!Number.isSafeInteger(limit) || limit < 0) throw new RangeError(`readOutput limit must be a non-negative integer, got ${limit}`);
  if (Number.isNaN(maxBytes) || maxBytes < 0) throw new RangeError(`readOutput maxBytes must be a non-negative number, got ${maxBytes}`);
  if (limit === 0) return [];
  // The byte bound is applied in the database first (rows past it are never sent nor read from
  // TOAST), counting nothing of a row that starts before `from`: that row may be packed and hold
  // items on both sides, so the database keeps at least every row the exact bound below keeps.
  const bound = maxBytes === Number.POSITIVE_INFINITY ? null : Math.min(Math.ceil(maxBytes), Number.MAX_SAFE_INTEGER);
  const events: OutputEvent[] = [];
  let bytes = 0;
  for (const row of await store.read<OutputRow>(store.sql.readOutput, [streamId, from, limit, bound])) {
    for (const event of eventsFrom(row, from)) {
      if (events.length >= limit || bytes >= maxBytes) return events;
      events.push(event);
      if (event.event === "item") bytes += event.data.length;
    }
  }
  return events;
}

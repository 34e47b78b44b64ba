/**
 * A group of writes whose transaction SQLite rolls back as a whole (a full disk: SQLITE_FULL rolls
 * back the transaction, not only the failing statement's savepoint). The writes before the failure
 * are gone with it, and none after it may commit on its own outside the group: the group fails as
 * one, and nothing of it is stored. `max_page_count` stands in for a disk that is nearly full.
 */
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { GroupCommit } from "../src/store/group-commit.js";
import type { PayloadFiles } from "../src/store/payload-files.js";
import { openSessionDatabase } from "../src/store/sqlite-database.js";
import { RecordAppend } from "../src/store/sqlite-log-rows.js";
import { SqliteMutations } from "../src/store/sqlite-mutations.js";
import { prepareStatements } from "../src/store/sqlite-statements.js";
import { removeStoreDirs, session, sqliteDir, startAttempt, stream } from "./support/store-records.js";

afterEach(removeStoreDirs);

function nearlyFullStore() {
  const db = openSessionDatabase(join(sqliteDir(), "sessions.db"), 4096);
  const statements = prepareStatements(db);
  const mutations = new SqliteMutations(db, statements, 16 * 1024);
  const s = session();
  const streams = [stream(s.sessionId, "input"), stream(s.sessionId, "input"), stream(s.sessionId, "input")];
  mutations.createSession(s, streams, startAttempt(s));
  db.pragma(`max_page_count = ${Number(db.pragma("page_count", { simple: true })) + 6}`);
  const stored = (streamId: string) => ({
    count: (statements.getStream.get(streamId) as { count: bigint }).count,
    rows: (db.prepare("SELECT count(*) AS n FROM input_chunks WHERE stream_id = ?").get(streamId) as { n: bigint }).n,
  });
  const group = new GroupCommit(mutations.commitGroup, {} as PayloadFiles);
  /** One input append through the group commit: "stored", or the code it failed with. */
  const append = (streamId: string, sequence: bigint, size: number): Promise<string | undefined> => {
    const record = new RecordAppend("input", chunk(streamId, sequence, size), undefined);
    return group
      .write(() => mutations.writeAppend(record), record)
      .then(
        () => "stored",
        (error: { code?: string }) => error.code,
      );
  };
  return { db, streams, stored, append };
}

const chunk = (streamId: string, sequence: bigint, size: number) => ({
  streamId,
  sequence,
  itemCount: 1n,
  data: new Uint8Array(size).fill(1),
  mimeType: undefined,
});

it("a write that fills the disk fails its whole group: the writes after it are not committed on their own", async () => {
  const { db, streams, stored, append } = nearlyFullStore();
  const outcomes = await Promise.all([
    append(streams[0]!.streamId, 0n, 100),
    append(streams[1]!.streamId, 0n, 200_000),
    append(streams[2]!.streamId, 0n, 100),
  ]);
  expect(outcomes).toEqual(["SQLITE_FULL", "SQLITE_FULL", "SQLITE_FULL"]);
  for (const { streamId } of streams) expect(stored(streamId), streamId).toEqual({ count: 0n, rows: 0n });
  // Room again: the store goes on.
  db.pragma("max_page_count = 1000000");
  await expect(append(streams[2]!.streamId, 0n, 100)).resolves.toBe("stored");
  expect(stored(streams[2]!.streamId)).toEqual({ count: 1n, rows: 1n });
  db.close();
});

it("a run of appends that fills the disk fails its whole group, not one append at a time outside it", async () => {
  const { db, streams, stored, append } = nearlyFullStore();
  const [first, second] = [streams[0]!.streamId, streams[1]!.streamId];
  // Three appends of one stream continue one another: one run, too large for the disk as a whole,
  // each of which alone would fit (written one at a time outside the group, the first would commit).
  const outcomes = await Promise.all([
    append(first, 0n, 100),
    append(second, 0n, 12_000),
    append(second, 1n, 12_000),
    append(second, 2n, 12_000),
  ]);
  expect(outcomes).toEqual(["SQLITE_FULL", "SQLITE_FULL", "SQLITE_FULL", "SQLITE_FULL"]);
  expect(stored(first)).toEqual({ count: 0n, rows: 0n });
  expect(stored(second)).toEqual({ count: 0n, rows: 0n });
  db.close();
});

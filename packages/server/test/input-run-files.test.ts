/**
 * Runs of small input chunks in payload files (`InputAppendTask.placePayload`,
 * `SqliteSessionStore`): the chunks that joined one queued write keep their bytes in the
 * session's payload file once they hold 16 KiB (or `payloadFileThreshold`, if lower), written and
 * synced before the rows that point at them commit; the rows keep their cuts and part lists.
 * Reads, stored-byte sums and purges see the same log as if the bytes were in the rows; a run
 * whose file cannot be written commits none of its chunks; a group that holds output places no
 * run.
 */
import { afterEach, describe, expect, it } from "vitest";
import { existsSync, mkdirSync, readdirSync, rmdirSync, statSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { SqliteSessionStore, type SqliteSessionStoreOptions } from "../src/index.js";
import { ATTEMPT_RECORD_BYTES, sessionRecordBytes, type InputChunk } from "../src/store/index.js";
import { recordingWatcher } from "./support/input-watcher.js";
import { removeStoreDirs, session, sqliteDir, startAttempt, stream } from "./support/store-records.js";

afterEach(removeStoreDirs);

/** A run of this many bytes or more goes to the payload file (the store's `RUN_FILE_BYTES`). */
const RUN_FILE_BYTES = 16384;

/** Chunk `i`'s bytes: its length varies, every byte a function of the chunk and its place. */
function chunkBytes(i: number, length: number): Uint8Array {
  return Uint8Array.from({ length }, (_, at) => (i * 7 + at * 13) & 0xff);
}

async function storeWithInput(options: Omit<SqliteSessionStoreOptions, "dataDir"> = {}) {
  const dataDir = sqliteDir();
  let store = new SqliteSessionStore({ dataDir, ...options });
  const s = session();
  const input = stream(s.sessionId, "input");
  const output = stream(s.sessionId, "output");
  await store.createSession(s, [input, output], startAttempt(s));
  let next = 0n;
  let sent: InputChunk[] = [];
  /**
   * Hands `lengths.length` chunks to the store as one write and those that join it (`alongside`:
   * other writes of the same turn, so of the same group); resolves with its watcher's calls.
   */
  const burst = async (lengths: readonly number[], counts: (i: number) => bigint = () => 1n, alongside?: () => Promise<void>) => {
    const told = recordingWatcher();
    lengths.forEach((length, i) => {
      const chunk: InputChunk = {
        streamId: input.streamId,
        sequence: next,
        itemCount: counts(i),
        data: chunkBytes(sent.length, length),
        mimeType: undefined,
      };
      next += chunk.itemCount;
      sent.push(chunk);
      if (i === 0) store.acceptInputWatched(chunk, undefined, told);
      else expect(store.joinInputWatched(chunk, undefined, told)).toBe(true);
    });
    await Promise.all([told.told, alongside?.()]);
    return told.calls;
  };
  /** The chunks sent that overlap `[from, to)`, as a read should return them. */
  const expected = (from: bigint, to: bigint) =>
    sent
      .filter((c) => c.sequence < to && c.sequence + c.itemCount > from)
      .map((c) => ({ ...c, data: Buffer.from(c.data).toString("hex") }));
  const read = async (from: bigint, to: bigint) =>
    (await store.readInput(input.streamId, from, to)).map((c) => ({ ...c, data: Buffer.from(c.data).toString("hex") }));
  /** The input log's rows as the database holds them (read with the store closed: it holds the database exclusively), the store opened again. */
  const rows = async () => {
    await store.close();
    const db = new Database(join(dataDir, "sessions.db"), { readonly: true });
    try {
      return db
        .prepare(
          "SELECT sequence, length(data) AS inline, payload_offset AS offset, payload_length AS length, parts IS NOT NULL AS packed FROM input_chunks ORDER BY sequence",
        )
        .all() as { inline: number; offset: number | null; length: number | null; packed: number }[];
    } finally {
      db.close();
      store = new SqliteSessionStore({ dataDir, ...options });
    }
  };
  const payloadFile = join(dataDir, "payloads", s.sessionId);
  const reopen = async () => {
    await store.close();
    store = new SqliteSessionStore({ dataDir, ...options });
  };
  /** Forgets what was sent: the stream stood still (nothing of it committed), and a client sends it again. */
  const rewind = () => {
    next = 0n;
    sent = [];
  };
  return { store: () => store, s, input, output, burst, expected, read, rows, payloadFile, reopen, rewind, sent: () => next, dataDir };
}

describe("runs of joined input chunks in payload files", () => {
  it("a run of 16 KiB or more keeps its bytes in the payload file, its rows only their cuts and part lists; every range reads back as appended, after a reopen too", async () => {
    const t = await storeWithInput();
    // 700 chunks of 1 to 97 bytes, some of several items, and two longer than a packed row (rows of one chunk).
    const lengths = Array.from({ length: 700 }, (_, i) => (i === 100 || i === 400 ? 20_000 : 1 + ((i * 37) % 97)));
    const total = lengths.reduce((sum, length) => sum + length, 0);
    expect(total).toBeGreaterThanOrEqual(RUN_FILE_BYTES);
    expect(await t.burst(lengths, (i) => BigInt(1 + (i % 3)))).toEqual([undefined]);
    const end = t.sent();
    expect((await t.store().getStream(t.input.streamId))?.count).toBe(end);

    const rows = await t.rows();
    expect(rows.length).toBeGreaterThan(4); // cut into packed rows of at most 16 KiB, as in the database
    for (const row of rows) expect(row).toMatchObject({ inline: 0, offset: expect.any(Number), length: expect.any(Number) });
    expect(rows.some((row) => row.packed === 0)).toBe(true); // the chunks longer than a row
    // The rows' slices follow one another through the run's bytes.
    for (let i = 1; i < rows.length; i++) expect(rows[i]!.offset).toBe(rows[i - 1]!.offset! + rows[i - 1]!.length!);
    expect(rows.reduce((sum, row) => sum + row.length!, 0)).toBe(total);
    expect(statSync(t.payloadFile).size).toBeGreaterThanOrEqual(total);

    const ranges: [bigint, bigint][] = [
      [0n, end],
      [5n, 6n],
      [17n, 19n],
      [300n, 900n],
      [end - 1n, end],
      [end, end + 5n],
    ];
    for (const [from, to] of ranges) expect(await t.read(from, to)).toEqual(t.expected(from, to));
    // The payload bytes, beside the session's own record and its start's attempt.
    const records = sessionRecordBytes(t.s) + ATTEMPT_RECORD_BYTES;
    expect(await t.store().storedBytesByPrincipal()).toEqual([{ account: t.s.account, principal: t.s.principal, bytes: total + records }]);
    await t.reopen();
    for (const [from, to] of ranges) expect(await t.read(from, to)).toEqual(t.expected(from, to));
    await t.store().close();
  });

  it("a run under 16 KiB keeps its bytes in its rows, and so does every run with payloadFileThreshold Infinity", async () => {
    for (const [options, count] of [
      [{}, 200],
      [{ payloadFileThreshold: Number.POSITIVE_INFINITY }, 2000],
    ] as const) {
      const t = await storeWithInput(options);
      expect(await t.burst(Array.from({ length: count }, () => 64))).toEqual([undefined]);
      for (const row of await t.rows()) expect(row).toMatchObject({ offset: null, length: null });
      expect(existsSync(t.payloadFile)).toBe(false);
      expect(await t.read(0n, t.sent())).toEqual(t.expected(0n, t.sent()));
      await t.store().close();
    }
  });

  it("a run in a group that holds output stays in its rows: the output, sent after the commit, waits for no file write", async () => {
    const t = await storeWithInput();
    const item = {
      event: "item",
      streamId: t.output.streamId,
      sequence: 0n,
      itemCount: 1n,
      data: chunkBytes(9, 64),
      mimeType: undefined,
    } as const;
    // The output item is appended in the turn the run is handed over: both are in one group.
    expect(
      await t.burst(
        Array.from({ length: 400 }, () => 64),
        undefined,
        () => t.store().appendOutput(item, []),
      ),
    ).toEqual([undefined]);
    for (const row of await t.rows()) expect(row).toMatchObject({ offset: null, length: null });
    expect(existsSync(t.payloadFile)).toBe(false);
    expect(await t.read(0n, 400n)).toEqual(t.expected(0n, 400n));
    // The next run, in a group of its own, goes to the file.
    expect(await t.burst(Array.from({ length: 400 }, () => 64))).toEqual([undefined]);
    expect((await t.rows()).filter((row) => row.offset !== null).length).toBeGreaterThan(0);
    expect(await t.read(0n, 800n)).toEqual(t.expected(0n, 800n));
    await t.store().close();
  });

  it("a payloadFileThreshold under 16 KiB sends smaller runs to the file as well", async () => {
    const t = await storeWithInput({ payloadFileThreshold: 4096 });
    expect(await t.burst(Array.from({ length: 100 }, () => 64))).toEqual([undefined]);
    for (const row of await t.rows()) expect(row).toMatchObject({ inline: 0, offset: expect.any(Number) });
    expect(await t.read(0n, 100n)).toEqual(t.expected(0n, 100n));
    await t.store().close();
  });

  it("a run whose payload file cannot be written commits none of its chunks and tells its watcher; the next run commits", async () => {
    const t = await storeWithInput();
    // A directory where the session's file would be: opening it for writing fails.
    mkdirSync(t.payloadFile, { recursive: true });
    const calls = await t.burst(Array.from({ length: 400 }, () => 64));
    expect(calls).toHaveLength(1);
    expect(calls[0]).toBeInstanceOf(Error);
    expect((await t.store().getStream(t.input.streamId))?.count).toBe(0n);
    expect(await t.rows()).toEqual([]);
    expect(await t.read(0n, 400n)).toEqual([]);

    rmdirSync(t.payloadFile);
    // Sent again from where the stream stands, as a client resends what was never acknowledged.
    t.rewind();
    expect(await t.burst(Array.from({ length: 1000 }, (_, i) => 1 + (i % 64)))).toEqual([undefined]);
    expect(statSync(t.payloadFile).isFile()).toBe(true);
    expect(await t.read(0n, 1000n)).toEqual(t.expected(0n, 1000n));
    await t.reopen();
    expect(await t.read(0n, 1000n)).toEqual(t.expected(0n, 1000n));
    await t.store().close();
  });

  it("a purge of the session removes the file its runs were kept in", async () => {
    const t = await storeWithInput();
    expect(await t.burst(Array.from({ length: 400 }, () => 64))).toEqual([undefined]);
    expect(existsSync(t.payloadFile)).toBe(true);
    await t.store().finish(t.s.sessionId, "success", 1_000);
    expect(await t.store().purgeFinished(2_000, 2_000, 0)).toBe(1);
    expect(readdirSync(join(t.dataDir, "payloads"))).toEqual([]);
    await t.store().close();
  });
});

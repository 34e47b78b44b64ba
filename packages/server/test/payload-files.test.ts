/**
 * Large payloads of the SQLite store live in per-session files
 * (`src/store/payload-files.ts`): what goes there, that it reads back the
 * same across reopening, that a failed file write commits nothing, and that
 * files go when their sessions go.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { SCHEMA_VERSION } from "../src/store/sqlite-schema.js";
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { createHash, randomBytes, randomUUID } from "node:crypto";
import Database from "better-sqlite3";
import { SqliteSessionStore } from "../src/index.js";
import { type InputChunk, type SessionRecord } from "../src/store/index.js";
import { alignUp } from "../src/store/payload-direct-io.js";
import { DIRECT_IO_AVAILABLE, PayloadFiles } from "../src/store/payload-files.js";
import { FileSync } from "../src/store/sqlite-database.js";
import { bytes, removeStoreDirs, session, sqliteDir, startAttempt, stream } from "./support/store-records.js";

afterEach(removeStoreDirs);

const THRESHOLD = 1024;

/** Where a payload that follows `end` starts: with direct I/O (the default on Linux) at an aligned offset. */
const place = (end: number): number => (DIRECT_IO_AVAILABLE ? alignUp(end) : end);

async function openWithSession(dataDir: string, overrides: Partial<SessionRecord> = {}) {
  const store = new SqliteSessionStore({ dataDir, payloadFileThreshold: THRESHOLD });
  const s = session(overrides);
  const input = stream(s.sessionId, "input");
  await store.createSession(s, [input], startAttempt(s));
  return { store, s, input };
}

const chunk = (streamId: string, sequence: bigint, data: Uint8Array): InputChunk => ({
  streamId,
  sequence,
  itemCount: BigInt(data.length),
  data,
  mimeType: undefined,
});

/** The log columns of every row, as stored. */
function rows(dataDir: string, table: "input_chunks" | "output_events") {
  const db = new Database(join(dataDir, "sessions.db"), { readonly: true });
  try {
    return db
      .prepare(`SELECT length(data) AS inline, payload_offset AS offset, payload_length AS length FROM ${table} ORDER BY rowid`)
      .all();
  } finally {
    db.close();
  }
}

describe("SqliteSessionStore payload files", () => {
  it("keeps payloads of at least payloadFileThreshold bytes in the session's file and the rest in the row", async () => {
    const dataDir = sqliteDir();
    const { store, s, input } = await openWithSession(dataDir);
    const small = randomBytes(THRESHOLD - 1);
    const large = randomBytes(THRESHOLD);
    const larger = randomBytes(3 * THRESHOLD + 7);
    await store.acceptInput(chunk(input.streamId, 0n, small), []);
    await Promise.all([
      store.acceptInput(chunk(input.streamId, BigInt(small.length), large), []),
      store.acceptInput(chunk(input.streamId, BigInt(small.length + large.length), larger), []),
    ]);
    const out = stream(s.sessionId, "output", { parent: { kind: "result" }, elementKind: "binary" });
    await store.setResult(s.sessionId, '{"kind":"none"}', [out]);
    const blob = randomBytes(2 * THRESHOLD);
    await store.appendOutput({ event: "item", streamId: out.streamId, sequence: 0n, itemCount: 1n, data: blob, mimeType: "image/png" }, []);
    await store.appendOutput({ event: "terminal", streamId: out.streamId, sequence: 1n, outcome: '{"kind":"ok"}' }, []);
    await store.close();

    expect(rows(dataDir, "input_chunks")).toEqual([
      { inline: small.length, offset: null, length: null },
      { inline: 0, offset: 0, length: large.length },
      { inline: 0, offset: place(large.length), length: larger.length },
    ]);
    const blobAt = place(place(large.length) + larger.length);
    expect(rows(dataDir, "output_events")).toEqual([
      { inline: 0, offset: blobAt, length: blob.length },
      { inline: null, offset: null, length: null },
    ]);
    // A direct write ends on an aligned offset: the last payload's padding is written too.
    expect(statSync(join(dataDir, "payloads", s.sessionId)).size).toBe(place(blobAt + blob.length));

    const reopened = new SqliteSessionStore({ dataDir, payloadFileThreshold: THRESHOLD });
    const chunks = await reopened.readInput(input.streamId, 0n, 10_000n);
    expect(chunks.map((c) => Buffer.from(c.data))).toEqual([small, large, larger]);
    expect(await reopened.readOutput(out.streamId, 0n, 10)).toEqual([
      { event: "item", streamId: out.streamId, sequence: 0n, itemCount: 1n, data: new Uint8Array(blob), mimeType: "image/png" },
      { event: "terminal", streamId: out.streamId, sequence: 1n, outcome: '{"kind":"ok"}' },
    ]);
    await reopened.close();
  });

  it("payloadFileThreshold Infinity keeps every payload in the database; wrong values are refused", async () => {
    const dataDir = sqliteDir();
    const store = new SqliteSessionStore({ dataDir, payloadFileThreshold: Number.POSITIVE_INFINITY });
    const s = session();
    const input = stream(s.sessionId, "input");
    await store.createSession(s, [input], startAttempt(s));
    await store.acceptInput(chunk(input.streamId, 0n, randomBytes(1 << 20)), []);
    await store.close();
    expect(readdirSync(join(dataDir, "payloads"))).toEqual([]);
    expect(rows(dataDir, "input_chunks")).toEqual([{ inline: 1 << 20, offset: null, length: null }]);
    for (const wrong of [0, -1, 1.5, Number.NaN, Number.NEGATIVE_INFINITY, "65536", 2 ** 53]) {
      expect(() => new SqliteSessionStore({ dataDir: sqliteDir(), payloadFileThreshold: wrong as number })).toThrow(TypeError);
    }
  });

  it("a payload whose file cannot be written commits nothing of its group; the stream goes on once the file can be written", async () => {
    const dataDir = sqliteDir();
    const { store, s, input } = await openWithSession(dataDir);
    const first = randomBytes(THRESHOLD);
    await store.acceptInput(chunk(input.streamId, 0n, first), []);
    // A directory where the file should be: opening it for writing fails (even for root).
    const file = join(dataDir, "payloads", s.sessionId);
    const original = join(dataDir, `${s.sessionId}.moved`);
    renameSync(file, original);
    mkdirSync(file);
    const second = randomBytes(THRESHOLD);
    const smallBeside = bytes("x");
    const group = await Promise.allSettled([
      store.acceptInput(chunk(input.streamId, BigInt(first.length), second), []),
      store.endInput(input.streamId, { kind: "end" }),
    ]);
    expect(group.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    expect((await store.getStream(input.streamId))?.count).toBe(BigInt(first.length));
    expect((await store.getStream(input.streamId))?.inputTerminal).toBeUndefined();

    rmdirSync(file);
    renameSync(original, file);
    await store.acceptInput(chunk(input.streamId, BigInt(first.length), second), []);
    await store.acceptInput(chunk(input.streamId, BigInt(first.length + second.length), smallBeside), []);
    const read = await store.readInput(input.streamId, 0n, 1_000_000n);
    expect(read.map((c) => Buffer.from(c.data))).toEqual([first, second, Buffer.from(smallBeside)]);
    await store.close();
  });

  it("with payloadDirectIo false, lays payloads end to end through the page cache", async () => {
    const dataDir = sqliteDir();
    const store = new SqliteSessionStore({ dataDir, payloadFileThreshold: THRESHOLD, payloadDirectIo: false });
    const s = session();
    const input = stream(s.sessionId, "input");
    await store.createSession(s, [input], startAttempt(s));
    const first = randomBytes(THRESHOLD + 3);
    const second = randomBytes(THRESHOLD);
    await store.acceptInput(chunk(input.streamId, 0n, first), []);
    await store.acceptInput(chunk(input.streamId, BigInt(first.length), second), []);
    expect((await store.readInput(input.streamId, 0n, 1_000_000n)).map((c) => Buffer.from(c.data))).toEqual([first, second]);
    await store.close();
    expect(rows(dataDir, "input_chunks")).toEqual([
      { inline: 0, offset: 0, length: first.length },
      { inline: 0, offset: first.length, length: second.length },
    ]);
    expect(statSync(join(dataDir, "payloads", s.sessionId)).size).toBe(first.length + second.length);
  });

  it("bytes a crash left after the last committed payload are skipped, never read", async () => {
    const dataDir = sqliteDir();
    const { store, s, input } = await openWithSession(dataDir);
    const first = randomBytes(THRESHOLD);
    await store.acceptInput(chunk(input.streamId, 0n, first), []);
    await store.close();
    // As if a group's bytes were written and the process died before its commit.
    appendFileSync(join(dataDir, "payloads", s.sessionId), randomBytes(500));

    const reopened = new SqliteSessionStore({ dataDir, payloadFileThreshold: THRESHOLD });
    const second = randomBytes(THRESHOLD + 1);
    await reopened.acceptInput(chunk(input.streamId, BigInt(first.length), second), []);
    expect((await reopened.readInput(input.streamId, 0n, 1_000_000n)).map((c) => Buffer.from(c.data))).toEqual([first, second]);
    await reopened.close();
    expect(rows(dataDir, "input_chunks")).toEqual([
      { inline: 0, offset: 0, length: first.length },
      { inline: 0, offset: place(place(first.length) + 500), length: second.length },
    ]);
  });

  it("reads file payloads from the thread pool, the file opened with the rows: a purge's unlink right after cannot take them", async () => {
    const dataDir = sqliteDir();
    const { store, s, input } = await openWithSession(dataDir);
    const data = randomBytes(3 * THRESHOLD);
    await store.acceptInput(chunk(input.streamId, 0n, data), []);
    const out = stream(s.sessionId, "output", { parent: { kind: "result" }, elementKind: "binary" });
    await store.setResult(s.sessionId, '{"kind":"none"}', [out]);
    const blob = randomBytes(2 * THRESHOLD);
    await store.appendOutput({ event: "item", streamId: out.streamId, sequence: 0n, itemCount: 1n, data: blob, mimeType: undefined }, []);

    const inputRead = store.readInput(input.streamId, 0n, 1_000_000n);
    const outputRead = store.readOutput(out.streamId, 0n, 10);
    // A turn of the event loop passes before the reads come back: they were not read on it.
    const order: string[] = [];
    setImmediate(() => order.push("a turn later"));
    void inputRead.then(() => order.push("input read"));
    // As a purge would after its commit: the file goes, in the same turn as the reads' rows.
    rmSync(join(dataDir, "payloads", s.sessionId));
    expect((await inputRead).map((c) => Buffer.from(c.data))).toEqual([data]);
    expect((await outputRead).map((e) => (e.event === "item" ? Buffer.from(e.data) : undefined))).toEqual([blob]);
    expect(order[0]).toBe("a turn later");
    await store.close();
  });

  it("a payload file shorter than its rows say fails the read with a clear error", async () => {
    const dataDir = sqliteDir();
    const { store, s, input } = await openWithSession(dataDir);
    await store.acceptInput(chunk(input.streamId, 0n, randomBytes(THRESHOLD)), []);
    truncateSync(join(dataDir, "payloads", s.sessionId), THRESHOLD - 1);
    await expect(store.readInput(input.streamId, 0n, 10n)).rejects.toThrow(/payload file .* ends before/);
    await store.close();
  });

  it("a purge removes the files of the sessions it deletes; opening removes files of sessions the database lacks", async () => {
    const dataDir = sqliteDir();
    const { store, s: old, input } = await openWithSession(dataDir);
    await store.acceptInput(chunk(input.streamId, 0n, randomBytes(THRESHOLD)), []);
    await store.finish(old.sessionId, '{"kind":"success"}', 1000);
    const recent = session({ idempotencyKey: "key-2" });
    const recentInput = stream(recent.sessionId, "input");
    await store.createSession(recent, [recentInput], startAttempt(recent));
    await store.acceptInput(chunk(recentInput.streamId, 0n, randomBytes(THRESHOLD)), []);
    await store.finish(recent.sessionId, '{"kind":"success"}', 9000);

    expect(await store.purgeFinished(5000, 6000, 0)).toBe(1);
    expect(readdirSync(join(dataDir, "payloads"))).toEqual([recent.sessionId]);
    await store.close();

    // A purge that committed but crashed before its unlink, and a stranger's file.
    const orphan = randomUUID();
    writeFileSync(join(dataDir, "payloads", orphan), "left behind");
    writeFileSync(join(dataDir, "payloads", "notes.txt"), "not ours to delete");
    const reopened = new SqliteSessionStore({ dataDir, payloadFileThreshold: THRESHOLD });
    expect(existsSync(join(dataDir, "payloads", orphan))).toBe(false);
    expect(readdirSync(join(dataDir, "payloads")).sort()).toEqual(["notes.txt", recent.sessionId].sort());
    expect((await reopened.readInput(recentInput.streamId, 0n, 10n))[0]?.data.length).toBe(THRESHOLD);
    await reopened.close();
  });

  it('at synchronous: "normal" a purge syncs the WAL (its commit on disk) before it unlinks the files', async () => {
    const dataDir = sqliteDir();
    const store = new SqliteSessionStore({ dataDir, payloadFileThreshold: THRESHOLD, synchronous: "normal" });
    const s = session();
    const input = stream(s.sessionId, "input");
    await store.createSession(s, [input], startAttempt(s));
    await store.acceptInput(chunk(input.streamId, 0n, randomBytes(THRESHOLD)), []);
    await store.finish(s.sessionId, '{"kind":"success"}', 1000);
    // What reaches the disk, in order, while the purge runs: a power loss after an unlink whose
    // commit was not synced would keep the rows (rolled back) and lose their file.
    const steps: string[] = [];
    const originalSync = FileSync.prototype.sync;
    const originalRemove = PayloadFiles.prototype.remove;
    const sync = vi.spyOn(FileSync.prototype, "sync").mockImplementation(async function (this: FileSync) {
      await originalSync.call(this);
      steps.push("synced");
    });
    const remove = vi.spyOn(PayloadFiles.prototype, "remove").mockImplementation(function (this: PayloadFiles, sessionIds) {
      steps.push("unlink");
      return originalRemove.call(this, sessionIds);
    });
    try {
      expect(await store.purgeFinished(5000, 6000, 0)).toBe(1);
    } finally {
      sync.mockRestore();
      remove.mockRestore();
    }
    expect(steps).toEqual(["synced", "unlink"]);
    expect(readdirSync(join(dataDir, "payloads"))).toEqual([]);
    await store.close();
  });

  it("an item for a stream introduced in the same group stays in its row (its session is not committed yet)", async () => {
    const dataDir = sqliteDir();
    const { store, s } = await openWithSession(dataDir);
    const out = stream(s.sessionId, "output", { parent: { kind: "result" } });
    const data = randomBytes(THRESHOLD * 2);
    await Promise.all([
      store.setResult(s.sessionId, '{"kind":"none"}', [out]),
      store.appendOutput(
        { event: "item", streamId: out.streamId, sequence: 0n, itemCount: BigInt(data.length), data, mimeType: undefined },
        [],
      ),
    ]);
    expect(await store.readOutput(out.streamId, 0n, 1)).toMatchObject([{ event: "item", data: new Uint8Array(data) }]);
    await store.close();
    expect(rows(dataDir, "output_events")).toEqual([{ inline: data.length, offset: null, length: null }]);
  });

  it("close() waits for a group whose payloads are being written, and it is durable", async () => {
    const dataDir = sqliteDir();
    const { store, input } = await openWithSession(dataDir);
    const data = randomBytes(4 << 20);
    const accepted = store.acceptInput(chunk(input.streamId, 0n, data), []);
    await store.close();
    await accepted;
    const reopened = new SqliteSessionStore({ dataDir, payloadFileThreshold: THRESHOLD });
    expect((await reopened.getStream(input.streamId))?.count).toBe(BigInt(data.length));
    // Digests: comparing 4 MiB element by element takes vitest seconds.
    const digest = (bytes: Uint8Array | undefined) =>
      createHash("sha256")
        .update(bytes ?? new Uint8Array(0))
        .digest("hex");
    expect(digest((await reopened.readInput(input.streamId, 0n, 1n))[0]?.data)).toBe(digest(data));
    await reopened.close();
  });

  it("upgrades a schema 1 database (every payload in its row), which then takes payload files", async () => {
    const dataDir = sqliteDir();
    const { store, input } = await openWithSession(dataDir);
    const old = randomBytes(THRESHOLD);
    await store.close();
    // Rewrite the logs as schema 1 had them, with the chunk inline.
    const db = new Database(join(dataDir, "sessions.db"));
    db.exec(`
      DROP TABLE input_chunks; DROP TABLE output_events;
      CREATE TABLE input_chunks (stream_id TEXT NOT NULL REFERENCES streams(stream_id) ON DELETE CASCADE,
        sequence INTEGER NOT NULL, item_count INTEGER NOT NULL, data BLOB NOT NULL, mime_type TEXT,
        PRIMARY KEY (stream_id, sequence));
      CREATE TABLE output_events (stream_id TEXT NOT NULL REFERENCES streams(stream_id) ON DELETE CASCADE,
        sequence INTEGER NOT NULL, event TEXT NOT NULL, item_count INTEGER NOT NULL, data BLOB, mime_type TEXT, outcome TEXT,
        PRIMARY KEY (stream_id, sequence, event));
      PRAGMA user_version = 1;`);
    db.prepare("INSERT INTO input_chunks VALUES (?, 0, ?, ?, NULL)").run(input.streamId, old.length, old);
    db.prepare("UPDATE streams SET count = ? WHERE stream_id = ?").run(old.length, input.streamId);
    db.close();

    const upgraded = new SqliteSessionStore({ dataDir, payloadFileThreshold: THRESHOLD });
    const next = randomBytes(THRESHOLD);
    await upgraded.acceptInput(chunk(input.streamId, BigInt(old.length), next), []);
    expect((await upgraded.readInput(input.streamId, 0n, 1_000_000n)).map((c) => Buffer.from(c.data))).toEqual([old, next]);
    await upgraded.close();
    expect(rows(dataDir, "input_chunks")).toEqual([
      { inline: old.length, offset: null, length: null },
      { inline: 0, offset: 0, length: next.length },
    ]);
    const check = new Database(join(dataDir, "sessions.db"), { readonly: true });
    expect(check.pragma("user_version", { simple: true })).toBe(SCHEMA_VERSION);
    check.close();
  });
});

describe("SqliteSessionStore data directory", () => {
  it("belongs to one store at a time: a second one is refused with a clear error until the first closes", async () => {
    const dataDir = sqliteDir();
    const first = new SqliteSessionStore({ dataDir });
    expect(() => new SqliteSessionStore({ dataDir })).toThrow(/sessions\.db is in use by another store/);
    // The refused store took nothing: the first one still writes.
    const s = session();
    await first.createSession(s, [], startAttempt(s));
    await first.close();
    const second = new SqliteSessionStore({ dataDir });
    expect(await second.getSession(s.sessionId)).toMatchObject({ sessionId: s.sessionId });
    await second.close();
  }, 20_000);
});

/**
 * The `SessionStore` contract (`src/testing/store-contract.ts`, shared with
 * other stores as `@golem-stream/server/testing`), run against both
 * implementations; then what is SQLite's alone: reopening a directory,
 * savepoints per write, schema upgrades, page sizes.
 */
import { afterEach, describe, expect, it } from "vitest";
import { SCHEMA_VERSION } from "../src/store/sqlite-schema.js";
import { join } from "node:path";
import Database from "better-sqlite3";
import { MemorySessionStore, SqliteSessionStore, type SessionStore } from "../src/index.js";
import { storeContract } from "../src/testing/index.js";
import { bytes, removeStoreDirs, session, sqliteDir, startAttempt, storeWithInput, stream } from "./support/store-records.js";

const IMPLEMENTATIONS: [string, () => SessionStore][] = [
  ["SqliteSessionStore", () => new SqliteSessionStore({ dataDir: sqliteDir() })],
  // Every non-empty payload in the session's payload file instead of its row.
  ["SqliteSessionStore, payload files", () => new SqliteSessionStore({ dataDir: sqliteDir(), payloadFileThreshold: 1 })],
  ["MemorySessionStore", () => new MemorySessionStore()],
];
afterEach(removeStoreDirs);

for (const [name, createStore] of IMPLEMENTATIONS) storeContract({ describe, it, expect }, name, createStore);

describe("SqliteSessionStore on disk", () => {
  it("keeps everything across reopening the same directory", async () => {
    const dataDir = sqliteDir();
    const store = new SqliteSessionStore({ dataDir });
    const s = session();
    await store.createSession(s, [], startAttempt(s));
    const out = stream(s.sessionId, "output", { parent: { kind: "result" } });
    await store.setResult(s.sessionId, '{"kind":"none"}', [out]);
    const child = stream(s.sessionId, "output", { parent: { kind: "item", streamId: out.streamId, sequence: 0n } });
    await store.appendOutput(
      { event: "item", streamId: out.streamId, sequence: 0n, itemCount: 3n, data: bytes("abc"), mimeType: undefined },
      [child],
    );
    await store.appendOutput({ event: "terminal", streamId: out.streamId, sequence: 3n, outcome: '{"kind":"ok"}' }, []);
    await store.finish(s.sessionId, '{"kind":"success"}', 5000);
    await store.close();

    const reopened = new SqliteSessionStore({ dataDir });
    const streams = await reopened.listStreams(s.sessionId);
    expect(streams.map((x) => x.parent)).toEqual([{ kind: "result" }, { kind: "item", streamId: out.streamId, sequence: 0n }]);
    expect(streams[0]).toMatchObject({ count: 3n, outputTerminal: true });
    expect((await reopened.readOutput(out.streamId, 0n, 10)).map((e) => e.event)).toEqual(["item", "terminal"]);
    expect(await reopened.getSession(s.sessionId)).toMatchObject({ state: "finished", outcome: '{"kind":"success"}', finishedAt: 5000 });
    expect(await reopened.listRunningSessions()).toEqual([]);
    await reopened.close();
  });

  it("group-commits writes issued together; one failing write rolls back alone", async () => {
    const { store, s, input } = await storeWithInput();
    const writes = [
      store.acceptInput({ streamId: input.streamId, sequence: 0n, itemCount: 1n, data: bytes("a"), mimeType: undefined }, []),
      store.acceptInput({ streamId: input.streamId, sequence: 5n, itemCount: 1n, data: bytes("x"), mimeType: undefined }, []),
      store.acceptInput({ streamId: input.streamId, sequence: 1n, itemCount: 1n, data: bytes("b"), mimeType: undefined }, []),
    ];
    const settled = await Promise.allSettled(writes);
    expect(settled.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((await store.getStream(input.streamId))?.count).toBe(2n);
    expect((await store.readInput(input.streamId, 0n, 10n)).map((c) => c.sequence)).toEqual([0n, 1n]);
    await store.close();
  });

  it("a long run of appends issued together (many rows per statement) keeps every row, in order, on both logs", async () => {
    // 37 = 16 + 16 + 5 rows per log: full statements and a remainder; the
    // payload-file threshold puts every third item in the file.
    const { store, s, input } = await storeWithInput({ payloadFileThreshold: 64 });
    const out = stream(s.sessionId, "output", { parent: { kind: "result" } });
    await store.setResult(s.sessionId, '{"kind":"none"}', [out]);
    const text = (i: number): string => (i % 3 === 0 ? `${i}:`.padEnd(80, "x") : `item ${i}`);
    const n = 37;
    const writes: Promise<void>[] = [];
    for (let i = 0; i < n; i++) {
      const mimeType = i % 2 === 0 ? "text/plain" : undefined;
      writes.push(store.acceptInput({ streamId: input.streamId, sequence: BigInt(i), itemCount: 1n, data: bytes(text(i)), mimeType }, []));
      writes.push(
        store.appendOutput(
          { event: "item", streamId: out.streamId, sequence: BigInt(i), itemCount: 1n, data: bytes(text(i)), mimeType },
          [],
        ),
      );
    }
    await Promise.all(writes);
    const decode = (data: Uint8Array): string => new TextDecoder().decode(data);
    const chunks = await store.readInput(input.streamId, 0n, BigInt(n));
    expect(chunks.map((c) => [c.sequence, decode(c.data), c.mimeType])).toEqual(
      Array.from({ length: n }, (_, i) => [BigInt(i), text(i), i % 2 === 0 ? "text/plain" : undefined]),
    );
    const events = await store.readOutput(out.streamId, 0n, 100);
    expect(events.map((e) => (e.event === "item" ? [e.sequence, decode(e.data), e.mimeType] : e.event))).toEqual(
      Array.from({ length: n }, (_, i) => [BigInt(i), text(i), i % 2 === 0 ? "text/plain" : undefined]),
    );
    expect((await store.getStream(input.streamId))?.count).toBe(BigInt(n));
    expect((await store.getStream(out.streamId))?.count).toBe(BigInt(n));
    await store.close();
  });

  it("a write whose last statement fails rolls back its earlier statements, and only those", async () => {
    const { store, s, input } = await storeWithInput();
    // The chunk continues the stream, but the stream it introduces already exists.
    const clash = stream(s.sessionId, "input", { streamId: input.streamId });
    const writes = [
      store.acceptInput({ streamId: input.streamId, sequence: 0n, itemCount: 1n, data: bytes("a"), mimeType: undefined }, []),
      store.acceptInput({ streamId: input.streamId, sequence: 1n, itemCount: 1n, data: bytes("b"), mimeType: undefined }, [clash]),
      store.acceptInput({ streamId: input.streamId, sequence: 1n, itemCount: 1n, data: bytes("c"), mimeType: undefined }, []),
    ];
    expect((await Promise.allSettled(writes)).map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((await store.getStream(input.streamId))?.count).toBe(2n);
    expect((await store.readInput(input.streamId, 0n, 10n)).map((c) => new TextDecoder().decode(c.data))).toEqual(["a", "c"]);
    await store.close();
  });

  it("upgrades a database whose logs are WITHOUT ROWID tables (schema 0), keeping every row", async () => {
    const { dataDir, store, s, input } = await storeWithInput();
    const out = stream(s.sessionId, "output", { parent: { kind: "result" } });
    await store.setResult(s.sessionId, '{"kind":"none"}', [out]);
    await store.acceptInput({ streamId: input.streamId, sequence: 0n, itemCount: 2n, data: bytes("ab"), mimeType: undefined }, []);
    await store.appendOutput(
      { event: "item", streamId: out.streamId, sequence: 0n, itemCount: 1n, data: bytes("x"), mimeType: "text/plain" },
      [],
    );
    await store.close();

    // Rewrite the logs as the first schema had them.
    const db = new Database(join(dataDir, "sessions.db"));
    db.exec(`
      CREATE TABLE input_v0 (stream_id TEXT NOT NULL REFERENCES streams(stream_id) ON DELETE CASCADE,
        sequence INTEGER NOT NULL, item_count INTEGER NOT NULL, data BLOB NOT NULL, mime_type TEXT,
        PRIMARY KEY (stream_id, sequence)) WITHOUT ROWID;
      INSERT INTO input_v0 SELECT stream_id, sequence, item_count, data, mime_type FROM input_chunks; DROP TABLE input_chunks; ALTER TABLE input_v0 RENAME TO input_chunks;
      CREATE TABLE output_v0 (stream_id TEXT NOT NULL REFERENCES streams(stream_id) ON DELETE CASCADE,
        sequence INTEGER NOT NULL, event TEXT NOT NULL, item_count INTEGER NOT NULL, data BLOB, mime_type TEXT, outcome TEXT,
        PRIMARY KEY (stream_id, sequence, event)) WITHOUT ROWID;
      INSERT INTO output_v0 SELECT stream_id, sequence, event, item_count, data, mime_type, outcome FROM output_events; DROP TABLE output_events; ALTER TABLE output_v0 RENAME TO output_events;
      PRAGMA user_version = 0;`);
    const withoutRowid = () =>
      (db.prepare("SELECT sql FROM sqlite_master WHERE name IN ('input_chunks', 'output_events')").all() as { sql: string }[]).filter(
        (row) => row.sql.includes("WITHOUT ROWID"),
      ).length;
    expect(withoutRowid()).toBe(2);
    db.close();

    const upgraded = new SqliteSessionStore({ dataDir });
    expect((await upgraded.readInput(input.streamId, 0n, 2n)).map((c) => [c.sequence, new TextDecoder().decode(c.data)])).toEqual([
      [0n, "ab"],
    ]);
    expect(await upgraded.readOutput(out.streamId, 0n, 10)).toMatchObject([{ event: "item", sequence: 0n, mimeType: "text/plain" }]);
    await upgraded.acceptInput({ streamId: input.streamId, sequence: 2n, itemCount: 1n, data: bytes("c"), mimeType: undefined }, []);
    await upgraded.close();
    const check = new Database(join(dataDir, "sessions.db"), { readonly: true });
    try {
      const tables = check.prepare("SELECT sql FROM sqlite_master WHERE name IN ('input_chunks', 'output_events')").all() as {
        sql: string;
      }[];
      expect(tables).toHaveLength(2);
      expect(tables.filter((row) => row.sql.includes("WITHOUT ROWID"))).toEqual([]);
      expect(check.pragma("user_version", { simple: true })).toBe(SCHEMA_VERSION);
    } finally {
      check.close();
    }
  });

  it("upgrades a schema 2 database (no tombstone tables), which then keeps tombstones", async () => {
    const dataDir = sqliteDir();
    const store = new SqliteSessionStore({ dataDir });
    const s = session();
    const start = startAttempt(s);
    await store.createSession(s, [], start);
    await store.finish(s.sessionId, '{"kind":"success"}', 1000);
    await store.close();
    const db = new Database(join(dataDir, "sessions.db"));
    db.exec(`DROP TABLE attempt_tombstones; DROP TABLE idempotency_tombstones;
      ALTER TABLE input_chunks DROP COLUMN parts; ALTER TABLE output_events DROP COLUMN parts; PRAGMA user_version = 2;`);
    db.close();

    const upgraded = new SqliteSessionStore({ dataDir });
    expect(await upgraded.getAttempt(start.attemptId)).toEqual(start);
    expect(await upgraded.purgeFinished(1001, 2000, 0)).toBe(1);
    const again = session();
    expect(await upgraded.createSession(again, [], { ...start, sessionId: again.sessionId })).toEqual({ kind: "purged" });
    await upgraded.close();
  });

  it("upgrades a schema 4 database (no journal tables), which then keeps journals", async () => {
    const dataDir = sqliteDir();
    const store = new SqliteSessionStore({ dataDir });
    const s = session();
    await store.createSession(s, [], startAttempt(s));
    await store.close();
    const db = new Database(join(dataDir, "sessions.db"));
    db.exec("DROP TABLE journal; DROP TABLE session_runs; PRAGMA user_version = 4;");
    db.close();

    const upgraded = new SqliteSessionStore({ dataDir });
    await upgraded.appendJournal({ sessionId: s.sessionId, position: 0, name: "now", outcome: '{"value":1}' });
    expect(await upgraded.readJournal(s.sessionId)).toEqual([{ sessionId: s.sessionId, position: 0, name: "now", outcome: '{"value":1}' }]);
    expect(await upgraded.recordRun(s.sessionId)).toEqual({ run: 2, withoutProgress: 1 });
    await upgraded.close();
  });

  it("adds the run progress columns to a database whose run counts an earlier server wrote, without a new version: the count goes on, a server of that version still writes it", async () => {
    const dataDir = sqliteDir();
    const store = new SqliteSessionStore({ dataDir });
    const s = session();
    await store.createSession(s, [], startAttempt(s));
    expect(await store.recordRun(s.sessionId, undefined, 7n)).toEqual({ run: 2, withoutProgress: 0 });
    await store.close();
    const db = new Database(join(dataDir, "sessions.db"));
    db.exec("ALTER TABLE session_runs DROP COLUMN progress; ALTER TABLE session_runs DROP COLUMN stalled;");
    db.close();

    const upgraded = new SqliteSessionStore({ dataDir });
    // The row has no progress recorded: a re-run that finds any starts a new count.
    expect(await upgraded.recordRun(s.sessionId, undefined, 7n)).toEqual({ run: 3, withoutProgress: 0 });
    expect(await upgraded.recordRun(s.sessionId, undefined, 7n)).toEqual({ run: 4, withoutProgress: 1 });
    await upgraded.close();
    const check = new Database(join(dataDir, "sessions.db"));
    expect(check.pragma("user_version", { simple: true })).toBe(SCHEMA_VERSION);
    // What the earlier server's statement does with the table now.
    check
      .prepare(
        `INSERT INTO session_runs (session_id, runs) SELECT session_id, 2 FROM sessions WHERE session_id = ? AND state = 'running'
        ON CONFLICT (session_id) DO UPDATE SET runs = runs + 1`,
      )
      .run(s.sessionId);
    check.close();
    const again = new SqliteSessionStore({ dataDir });
    expect(await again.recordRun(s.sessionId, undefined, 7n)).toEqual({ run: 6, withoutProgress: 2 });
    await again.close();
  });

  it("upgrades a schema 5 database, whose rows read as before, to a version a schema 5 server refuses", async () => {
    const { dataDir, store, s, input } = await storeWithInput();
    await store.acceptInput({ streamId: input.streamId, sequence: 0n, itemCount: 1n, data: bytes("kept"), mimeType: undefined }, []);
    await store.close();
    const db = new Database(join(dataDir, "sessions.db"));
    db.exec("PRAGMA user_version = 5;");
    db.close();

    const upgraded = new SqliteSessionStore({ dataDir });
    expect((await upgraded.readInput(input.streamId, 0n, 1n)).map((c) => new TextDecoder().decode(c.data))).toEqual(["kept"]);
    await upgraded.close();
    const check = new Database(join(dataDir, "sessions.db"), { readonly: true });
    expect(check.pragma("user_version", { simple: true })).toBe(6);
    check.close();
    // What a server of one version less does with it: a version above its own is refused at open.
    const newer = new Database(join(dataDir, "sessions.db"));
    newer.exec(`PRAGMA user_version = ${SCHEMA_VERSION + 1};`);
    newer.close();
    expect(() => new SqliteSessionStore({ dataDir })).toThrow(/schema version 7; this server knows 6/);
  });

  it("one node keeps every session at epoch 1: journal entries and run counts of another epoch are refused and store nothing", async () => {
    const store = new SqliteSessionStore({ dataDir: sqliteDir() });
    const s = session();
    await store.createSession(s, [], startAttempt(s));
    const entry = { sessionId: s.sessionId, position: 0, name: "now", outcome: '{"value":1}' };
    await expect(store.appendJournal(entry, 2n)).rejects.toMatchObject({ code: "ownership-lost" });
    await expect(store.recordRun(s.sessionId, 2n)).rejects.toMatchObject({ code: "ownership-lost" });
    expect(await store.readJournal(s.sessionId)).toEqual([]);
    await store.appendJournal(entry, 1n);
    expect(await store.recordRun(s.sessionId, 1n)).toEqual({ run: 2, withoutProgress: 1 });
    expect(await store.readJournal(s.sessionId)).toEqual([entry]);
    await store.close();
  });

  it("creates a new database with 4 KiB pages (or pageSize); an existing one keeps its own", async () => {
    const pageSize = (dataDir: string): number => {
      const db = new Database(join(dataDir, "sessions.db"), { readonly: true });
      try {
        return Number(db.pragma("page_size", { simple: true }));
      } finally {
        db.close();
      }
    };
    const fresh = sqliteDir();
    await new SqliteSessionStore({ dataDir: fresh }).close();
    expect(pageSize(fresh)).toBe(4096);
    const large = sqliteDir();
    await new SqliteSessionStore({ dataDir: large, pageSize: 65536 }).close();
    expect(pageSize(large)).toBe(65536);
    await new SqliteSessionStore({ dataDir: large, pageSize: 4096 }).close();
    expect(pageSize(large)).toBe(65536);
    for (const wrong of [0, 1000, 2048, 131072, 16384.5, Number.NaN, "16384"]) {
      expect(() => new SqliteSessionStore({ dataDir: sqliteDir(), pageSize: wrong as number })).toThrow(TypeError);
    }
  });
});

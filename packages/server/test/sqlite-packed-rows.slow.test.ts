/**
 * The SQLite store packs a burst of small appends of one stream into few log
 * rows (`maxPackedRowBytes`, `src/store/packed-rows.ts`), and every read
 * still returns the appends exactly as they were made: checked against
 * `MemorySessionStore` at every range boundary, across a reopening, after an
 * upgrade from schema 3, and with a damaged row.
 */
import { afterEach, describe, expect, it } from "vitest";
import { SCHEMA_VERSION } from "../src/store/sqlite-schema.js";
import { join } from "node:path";
import Database from "better-sqlite3";
import fc from "fast-check";
import { MemorySessionStore, SqliteSessionStore, type SessionStore } from "../src/index.js";
import { burstStreams, checkAgainstModel, expectSameBurstReads, writeBurst } from "../src/testing/index.js";
import { bytes, removeStoreDirs, sqliteDir, sqliteModelStores } from "./support/store-records.js";

afterEach(removeStoreDirs);

/** Rows of a log table, and how many of them pack several appends. */
function rowCounts(dataDir: string, table: "input_chunks" | "output_events"): { rows: number; packed: number } {
  const db = new Database(join(dataDir, "sessions.db"), { readonly: true });
  try {
    return db.prepare(`SELECT COUNT(*) AS rows, COUNT(parts) AS packed FROM ${table}`).get() as { rows: number; packed: number };
  } finally {
    db.close();
  }
}

describe("SqliteSessionStore packed log rows", () => {
  it("writes a burst of small items in few rows and reads every range back as the appends were made", async () => {
    const dataDir = sqliteDir();
    let real: SessionStore = new SqliteSessionStore({ dataDir, maxPackedRowBytes: 1000 });
    const model = new MemorySessionStore();
    const ids = await burstStreams([real, model]);
    const n = 150;
    await Promise.all([writeBurst(real, ids, 0, n), writeBurst(model, ids, 0, n)]);
    await real.close();
    // About 60 bytes per item: 1000-byte rows hold 12 to 30 items.
    for (const table of ["input_chunks", "output_events"] as const) {
      const { rows, packed } = rowCounts(dataDir, table);
      expect(rows).toBeLessThan(n / 8);
      expect(packed).toBe(rows);
    }
    real = new SqliteSessionStore({ dataDir, maxPackedRowBytes: 1000 });
    await expectSameBurstReads(expect, real, model, ids, n);
    // The streams' counts moved by every item; the next append continues them.
    expect((await real.getStream(ids.input.streamId))?.count).toBe(BigInt(n));
    expect((await real.getStream(ids.output.streamId))?.count).toBe(BigInt(n));
    await expect(
      real.acceptInput({ streamId: ids.input.streamId, sequence: BigInt(n - 1), itemCount: 1n, data: bytes("x"), mimeType: undefined }, []),
    ).rejects.toThrow();
    await real.appendOutput({ event: "terminal", streamId: ids.output.streamId, sequence: BigInt(n), outcome: '{"kind":"ok"}' }, []);
    await model.appendOutput({ event: "terminal", streamId: ids.output.streamId, sequence: BigInt(n), outcome: '{"kind":"ok"}' }, []);
    expect(await real.readOutput(ids.output.streamId, BigInt(n - 2), 10)).toEqual(
      await model.readOutput(ids.output.streamId, BigInt(n - 2), 10),
    );
    await real.close();
  });

  it("by default packs rows past a page (16 KiB, 4 KiB pages): a burst of 3 000 items takes seven rows, not one per half page", async () => {
    const dataDir = sqliteDir();
    const real = new SqliteSessionStore({ dataDir });
    const model = new MemorySessionStore();
    const ids = await burstStreams([real, model]);
    const n = 3000;
    await Promise.all([writeBurst(real, ids, 0, n), writeBurst(model, ids, 0, n)]);
    // Every 97th item: each read from the middle of either row, and from their boundary's neighbours.
    await expectSameBurstReads(expect, real, model, ids, n, 97);
    await real.close();
    // About 37 bytes per item with its entry in the part list, 110 KB: seven rows of at most 16 KiB (8 KiB rows took fourteen).
    for (const table of ["input_chunks", "output_events"] as const) expect(rowCounts(dataDir, table)).toEqual({ rows: 7, packed: 7 });
  });

  it("maxPackedRowBytes: 0 writes a row per append; the option is checked", async () => {
    const dataDir = sqliteDir();
    const store = new SqliteSessionStore({ dataDir, maxPackedRowBytes: 0 });
    const ids = await burstStreams([store]);
    await writeBurst(store, ids, 0, 40);
    await store.close();
    expect(rowCounts(dataDir, "input_chunks")).toEqual({ rows: 40, packed: 0 });
    expect(rowCounts(dataDir, "output_events")).toEqual({ rows: 40, packed: 0 });
    for (const wrong of [-1, 1.5, Number.NaN, Infinity, "8192"]) {
      expect(() => new SqliteSessionStore({ dataDir: sqliteDir(), maxPackedRowBytes: wrong as number })).toThrow(TypeError);
    }
  });

  it("upgrades a schema 3 database: its rows read as before, later bursts are packed", async () => {
    const dataDir = sqliteDir();
    const old = new SqliteSessionStore({ dataDir, maxPackedRowBytes: 0 });
    const model = new MemorySessionStore();
    const ids = await burstStreams([old, model]);
    await Promise.all([writeBurst(old, ids, 0, 30), writeBurst(model, ids, 0, 30)]);
    await old.close();
    const db = new Database(join(dataDir, "sessions.db"));
    db.exec("ALTER TABLE input_chunks DROP COLUMN parts; ALTER TABLE output_events DROP COLUMN parts; PRAGMA user_version = 3;");
    db.close();

    const upgraded = new SqliteSessionStore({ dataDir, maxPackedRowBytes: 1000 });
    await Promise.all([writeBurst(upgraded, ids, 30, 60), writeBurst(model, ids, 30, 60)]);
    await expectSameBurstReads(expect, upgraded, model, ids, 90);
    await upgraded.close();
    expect(rowCounts(dataDir, "input_chunks").rows).toBeLessThan(30 + 60 / 8);
    const check = new Database(join(dataDir, "sessions.db"), { readonly: true });
    expect(check.pragma("user_version", { simple: true })).toBe(SCHEMA_VERSION);
    check.close();
  });

  it("a packed row whose part list does not describe it fails the read instead of replaying wrong items", async () => {
    const dataDir = sqliteDir();
    const store = new SqliteSessionStore({ dataDir });
    const ids = await burstStreams([store]);
    await writeBurst(store, ids, 0, 20);
    await store.close();
    const db = new Database(join(dataDir, "sessions.db"));
    db.exec("UPDATE input_chunks SET parts = substr(parts, 1, length(parts) - 1) WHERE parts IS NOT NULL");
    db.exec("UPDATE output_events SET parts = parts || X'0105' WHERE parts IS NOT NULL");
    db.close();
    const damaged = new SqliteSessionStore({ dataDir });
    await expect(damaged.readInput(ids.input.streamId, 0n, 20n)).rejects.toThrow(/packed row/);
    await expect(damaged.readOutput(ids.output.streamId, 0n, 20)).rejects.toThrow(/packed row/);
    await damaged.close();
  });

  it("answers every read as the in-memory model after any writes and reopenings, with small packed rows", async () => {
    // 300-byte rows: bursts of up to 12 appends cut into several packed rows, and items at or
    // above the 256-byte file threshold (or with a MIME type) break the runs.
    await checkAgainstModel({
      fc,
      expect,
      threshold: 256,
      maxBurst: 12,
      ...sqliteModelStores({ payloadFileThreshold: 256, maxPackedRowBytes: 300, synchronous: "normal" }),
      numRuns: 30,
    });
  });
});

#!/usr/bin/env node
/**
 * Log layouts side by side, on bare tables (not the store): CPU per row and
 * WAL pages per commit of 64-byte input rows, appended in commits of GROUP
 * rows (one count update each, rows 16 per statement) round-robin over
 * NSTREAMS streams among BACKGROUND others, in each layout (docs/performance.md,
 * Tried and dropped):
 *   v3          (stream_id TEXT, sequence) key index, foreign key into streams
 *   v3nofk      the same without the foreign key
 *   intindex    (stream_key INTEGER, sequence) key index beside the rowid
 *   packed      the row's INTEGER PRIMARY KEY is stream_key * 2^40 + sequence (schema 4)
 *   packedtext  packed, but the count update finds the stream by its text id
 *
 *   GROUP=16 ROWS=60000 ROUNDS=3 node bench/log-layouts.mjs
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";

const STREAMS_V3 = `CREATE TABLE streams (stream_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, count INTEGER NOT NULL DEFAULT 0,
  direction TEXT NOT NULL, input_terminal TEXT, output_terminal INTEGER NOT NULL DEFAULT 0, pad TEXT);`;
const STREAMS_V4 = `CREATE TABLE streams (stream_key INTEGER PRIMARY KEY, stream_id TEXT NOT NULL UNIQUE, session_id TEXT NOT NULL, count INTEGER NOT NULL DEFAULT 0,
  direction TEXT NOT NULL, input_terminal TEXT, output_terminal INTEGER NOT NULL DEFAULT 0, pad TEXT);`;
const S = 2n ** 40n;
const layouts = {
  v3: {
    streams: STREAMS_V3,
    log: `CREATE TABLE input_chunks (stream_id TEXT NOT NULL REFERENCES streams(stream_id) ON DELETE CASCADE,
      sequence INTEGER NOT NULL, item_count INTEGER NOT NULL, data BLOB NOT NULL, mime_type TEXT,
      payload_offset INTEGER, payload_length INTEGER, PRIMARY KEY (stream_id, sequence));`,
    advance: "UPDATE streams SET count = count + ? WHERE stream_id = ? AND count = ? AND direction = 'input' AND input_terminal IS NULL",
    key: (s) => s.id,
    row: (s, seq, data) => [s.id, seq, 1n, data, null, null, null],
  },
  v3nofk: {
    streams: STREAMS_V3,
    log: `CREATE TABLE input_chunks (stream_id TEXT NOT NULL,
      sequence INTEGER NOT NULL, item_count INTEGER NOT NULL, data BLOB NOT NULL, mime_type TEXT,
      payload_offset INTEGER, payload_length INTEGER, PRIMARY KEY (stream_id, sequence));`,
    advance: "UPDATE streams SET count = count + ? WHERE stream_id = ? AND count = ? AND direction = 'input' AND input_terminal IS NULL",
    key: (s) => s.id,
    row: (s, seq, data) => [s.id, seq, 1n, data, null, null, null],
  },
  intindex: {
    streams: STREAMS_V4,
    log: `CREATE TABLE input_chunks (stream_key INTEGER NOT NULL,
      sequence INTEGER NOT NULL, item_count INTEGER NOT NULL, data BLOB NOT NULL, mime_type TEXT,
      payload_offset INTEGER, payload_length INTEGER, PRIMARY KEY (stream_key, sequence));`,
    advance: "UPDATE streams SET count = count + ? WHERE stream_key = ? AND count = ? AND direction = 'input' AND input_terminal IS NULL",
    key: (s) => s.key,
    row: (s, seq, data) => [s.key, seq, 1n, data, null, null, null],
  },
  packed: {
    streams: STREAMS_V4,
    log: `CREATE TABLE input_chunks (log_key INTEGER PRIMARY KEY, item_count INTEGER NOT NULL, data BLOB NOT NULL, mime_type TEXT,
      payload_offset INTEGER, payload_length INTEGER);`,
    advance: "UPDATE streams SET count = count + ? WHERE stream_key = ? AND count = ? AND direction = 'input' AND input_terminal IS NULL",
    key: (s) => s.key,
    row: (s, seq, data) => [s.key * S + seq, 1n, data, null, null, null],
  },
  packedtext: {
    // packed log, but the count update still by the text id
    streams: STREAMS_V4,
    log: `CREATE TABLE input_chunks (log_key INTEGER PRIMARY KEY, item_count INTEGER NOT NULL, data BLOB NOT NULL, mime_type TEXT,
      payload_offset INTEGER, payload_length INTEGER);`,
    advance: "UPDATE streams SET count = count + ? WHERE stream_id = ? AND count = ? AND direction = 'input' AND input_terminal IS NULL",
    key: (s) => s.id,
    row: (s, seq, data) => [s.key * S + seq, 1n, data, null, null, null],
  },
};

const GROUP = Number(process.env.GROUP ?? 16); // rows per commit
const ROWS = Number(process.env.ROWS ?? 60000);
const NSTREAMS = Number(process.env.NSTREAMS ?? 4); // concurrent streams, round-robin commits
const BACKGROUND = Number(process.env.BACKGROUND ?? 2000); // other streams already in the db

function run(name) {
  const L = layouts[name];
  const dir = mkdtempSync(join(tmpdir(), "layout-"));
  const db = new Database(join(dir, "db"));
  db.defaultSafeIntegers(true);
  db.pragma("page_size = 16384");
  db.pragma("locking_mode = EXCLUSIVE");
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("foreign_keys = ON");
  db.pragma("wal_autocheckpoint = 0");
  db.exec(L.streams + L.log);
  const ins = db.prepare(`INSERT INTO streams (stream_id, session_id, direction, pad) VALUES (?, ?, 'input', ?)`);
  const streams = [];
  db.transaction(() => {
    for (let i = 0; i < BACKGROUND + NSTREAMS; i++) {
      const id = `stream-${crypto.randomUUID()}`;
      const key = ins.run(id, `session-${i}`, "x".repeat(300)).lastInsertRowid;
      if (i >= BACKGROUND) streams.push({ id, key, count: 0n });
    }
  })();
  const cols = L.row(streams[0], 0n, Buffer.alloc(1)).length;
  // A statement of 16 rows (or of GROUP, if smaller), and one per remainder size.
  const one = `(${new Array(cols).fill("?").join(",")})`;
  const stmt = db.prepare(`INSERT INTO input_chunks VALUES ${new Array(Math.min(GROUP, 16)).fill(one).join(",")}`);
  const stmtN = {};
  const insertRows = (rows) => {
    for (let at = 0; at < rows.length; at += 16) {
      const part = rows.slice(at, at + 16);
      const s =
        part.length === 16 || part.length === GROUP
          ? stmt
          : (stmtN[part.length] ??= db.prepare(`INSERT INTO input_chunks VALUES ${new Array(part.length).fill(one).join(",")}`));
      s.run(part.flat());
    }
  };
  const advance = db.prepare(L.advance);
  const commit = db.transaction((s, rows) => {
    if (advance.run(BigInt(rows.length), L.key(s), s.count).changes !== 1) throw new Error("advance");
    insertRows(rows);
  });
  const data = Buffer.from(`"${"x".repeat(62)}"`);
  const walBefore = statSync(join(dir, "db-wal")).size;
  const t0 = process.cpuUsage();
  let commits = 0;
  for (let done = 0; done < ROWS;) {
    const s = streams[commits % NSTREAMS];
    const rows = [];
    for (let i = 0; i < GROUP; i++) rows.push(L.row(s, s.count + BigInt(i), data));
    commit(s, rows);
    s.count += BigInt(GROUP);
    done += GROUP;
    commits++;
  }
  const t = process.cpuUsage(t0);
  const wal = statSync(join(dir, "db-wal")).size - walBefore;
  db.close();
  rmSync(dir, { recursive: true, force: true });
  // A WAL frame is a 16 KiB page and its 24-byte header.
  return { us: (t.user + t.system) / ROWS, walPerCommit: wal / commits / (16384 + 24) };
}

const names = (process.env.LAYOUTS ?? "v3,v3nofk,intindex,packed,packedtext").split(",");
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const results = Object.fromEntries(names.map((n) => [n, []]));
for (let r = 0; r < ROUNDS; r++) for (const n of names) results[n].push(run(n));
for (const n of names) {
  const us = results[n].map((x) => x.us).sort((a, b) => a - b);
  console.log(
    `${n.padEnd(11)} GROUP=${GROUP} µs/row median ${us[Math.floor(us.length / 2)].toFixed(2)} (${us.map((x) => x.toFixed(2)).join(" ")})  WAL pages/commit ${results[n][0].walPerCommit.toFixed(2)}`,
  );
}

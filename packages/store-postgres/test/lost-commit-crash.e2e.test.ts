/**
 * A COMMIT lost in a crash, on a PostgreSQL of this file's own: the writer's COMMIT is held at a
 * proxy (the server never gets it) and PostgreSQL is stopped at once (`-m immediate`: no
 * shutdown checkpoint, its WAL buffers are lost). The group's WAL records never reached the
 * disk, so recovery hands the group's transaction id out again, and the first writing
 * transaction after the restart (another connection's, here) gets it and commits. Only then
 * does the writer reconnect and ask what became of its group: `pg_xact_status` of that id says
 * "committed", about somebody else's transaction. The store must not believe it: the group's
 * commit marker (`writer_groups`) was lost with it, so the group is written again and the
 * session is in the store, as its acknowledgement said.
 *
 * The server keeps the group's WAL in memory until its commit: no WAL is written for a
 * transaction before a commit forces a flush unless a WAL page fills or something asks for it
 * (full-page images, the standby snapshot every 15 s at `wal_level` replica, autovacuum, a
 * checkpoint), so those are off or far away here, and the group starts a fresh WAL segment. The test checks that the id was handed out
 * again before it lets the writer ask, so it cannot pass without the crash it is about.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { session, startAttempt, stream } from "@golem-stream/server/testing";
import { startTcpProxy, type ProxiedConnection, type TcpProxy } from "@golem-stream/test-support";
import { startLocalPostgres, type LocalPostgres } from "../src/local-postgres.js";
import { PostgresSessionStore } from "../src/index.js";

let postgres: LocalPostgres;
let proxy: TcpProxy;

beforeAll(async () => {
  postgres = await startLocalPostgres({
    database: "crash",
    settings: {
      wal_level: "minimal",
      max_wal_senders: "0",
      full_page_writes: "off",
      autovacuum: "off",
      checkpoint_timeout: "1d",
      max_wal_size: "10GB",
      wal_writer_delay: "10s",
      synchronous_commit: "on",
    },
  });
  proxy = await startTcpProxy({ upstream: postgres.url });
}, 120_000);

afterAll(async () => {
  await proxy?.close();
  await postgres?.stop();
});

/**
 * The transaction ids the server sent each connection, from its answers: the value of each
 * row of a one-column result named `xid` (the writer's `pg_current_xact_id()`), in the wire
 * protocol's messages (a type byte, then a length that counts itself).
 */
function transactionIds(): {
  listen: (connection: ProxiedConnection, chunk: Buffer) => void;
  last: (connection: ProxiedConnection) => string | undefined;
} {
  const buffered = new Map<number, Buffer>();
  const xidColumn = new Map<number, boolean>();
  const seen = new Map<number, string>();
  return {
    listen(connection, chunk) {
      let data = Buffer.concat([buffered.get(connection.index) ?? Buffer.alloc(0), chunk]);
      // The server's first answer may be a one-byte SSL refusal ('N'), without a length.
      if (!buffered.has(connection.index) && data[0] === 0x4e && data.length === 1) data = data.subarray(1);
      while (data.length >= 5 && data.length >= 1 + data.readUInt32BE(1)) {
        const type = String.fromCharCode(data[0]!);
        const body = data.subarray(5, 1 + data.readUInt32BE(1));
        if (type === "T") xidColumn.set(connection.index, body.readUInt16BE(0) === 1 && body.subarray(2, 6).toString("latin1") === "xid\0");
        if (type === "D" && xidColumn.get(connection.index) === true && body.readUInt16BE(0) === 1) {
          seen.set(connection.index, body.subarray(6, 6 + body.readInt32BE(2)).toString("latin1"));
        }
        data = data.subarray(1 + data.readUInt32BE(1));
      }
      buffered.set(connection.index, data);
    },
    last: (connection) => seen.get(connection.index),
  };
}

describe("a COMMIT lost in a crash, its transaction id handed out again after the restart", () => {
  it("is not reported durable: the group is written again", async () => {
    const ids = transactionIds();
    let armed = false;
    let held!: (connection: ProxiedConnection) => void;
    const commitHeld = new Promise<ProxiedConnection>((resolve) => (held = resolve));
    proxy.tap((connection, from, chunk) => {
      if (from === "upstream") return ids.listen(connection, chunk);
      if (!armed || !chunk.toString("latin1").includes("COMMIT")) return;
      armed = false;
      // Held before it is relayed: the server never receives the COMMIT.
      proxy.pause();
      held(connection);
    });
    const url = new URL(postgres.url);
    url.port = String(proxy.port);
    const store = await PostgresSessionStore.connect({ connectionString: url.toString(), schema: "crash", outageGraceMs: 120_000 });
    const other = new pg.Client({ connectionString: postgres.url });
    try {
      // Earlier work, committed and flushed: the tables and the writer's connection are in use.
      const before = session({ idempotencyKey: "before" });
      await store.createSession(before, [stream(before.sessionId, "input")], startAttempt(before));
      await other.connect();
      await other.query("CREATE TABLE other_node_work (n integer)");
      // A new WAL segment: the group's few records then sit alone on its first page, which the
      // WAL writer (writing whole pages only, with no asynchronous commit to flush) leaves in memory.
      await other.query("SELECT pg_switch_wal()");
      await other.end();

      armed = true;
      const s = session({ idempotencyKey: "lost" });
      const created = store.createSession(s, [stream(s.sessionId, "input")], startAttempt(s));
      const writer = await commitHeld;
      const xid = ids.last(writer);
      expect(xid).toMatch(/^\d+$/);
      await postgres.shutdown("immediate");
      // Down, then up again but not for the store yet: another transaction goes first.
      proxy.setPlan(() => ({ refuse: true }));
      proxy.resume();
      await postgres.start();

      const again = new pg.Client({ connectionString: postgres.url });
      await again.connect();
      try {
        const { rows } = await again.query<{ xid: string }>(
          "INSERT INTO other_node_work VALUES (1) RETURNING pg_current_xact_id()::text AS xid",
        );
        // The crash this test is about: the id of the lost group is the next one handed out.
        expect(rows[0]?.xid).toBe(xid);
        expect((await again.query("SELECT 1 FROM crash.sessions WHERE session_id = $1", [s.sessionId])).rowCount).toBe(0);
        expect((await again.query<{ status: string }>("SELECT pg_xact_status($1::xid8) AS status", [xid])).rows[0]?.status).toBe(
          "committed",
        );
      } finally {
        await again.end();
      }

      proxy.setPlan(() => undefined);
      expect(await created).toEqual({ kind: "created" });
      // Acknowledged, so durable: in the store, once.
      expect((await store.getSession(s.sessionId))?.sessionId).toBe(s.sessionId);
      expect(await store.listStreams(s.sessionId)).toHaveLength(1);
      expect((await store.getSession(before.sessionId))?.sessionId).toBe(before.sessionId);
    } finally {
      await store.close();
    }
  });
});

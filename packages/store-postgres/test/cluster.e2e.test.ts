/**
 * Cluster mode: two stores (two node ids) on one schema, as two server
 * processes would be: owners, leases and orphan claims, the change feed.
 */
import { afterAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { bytes, clusterFencingContract, session, startAttempt, stream } from "@golem-stream/server/testing";
import { isClusterStore, type SessionChange } from "@golem-stream/server/store";
import type { PostgresSessionStore } from "../src/index.js";
import pg from "pg";
import { statements } from "../src/statements.js";
import { GONE_NODE_SECONDS } from "../src/membership.js";
import { admin, cleanUp, connect, freshSchema } from "./support/stores.js";

afterAll(cleanUp);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function pair(): Promise<[PostgresSessionStore, PostgresSessionStore]> {
  const schema = freshSchema();
  const a = await connect({ schema, nodeId: "node-a" });
  const b = await connect({ schema, nodeId: "node-b" });
  return [a, b];
}

/**
 * Waits until `count` backends of this database wait on a lock, counting with `inSchema` only
 * statements that name that schema (other test files share the database). Asked outside any
 * transaction: its statistics are a snapshot per transaction.
 */
async function lockWaiters(count: number, inSchema?: string): Promise<void> {
  const client = await admin();
  try {
    for (;;) {
      const { rows } = await client.query<{ n: string }>(
        "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND ($1::text IS NULL OR strpos(query, $1) > 0)",
        [inSchema ?? null],
      );
      if (Number(rows[0]!.n) >= count) return;
      await sleep(10);
    }
  } finally {
    await client.end();
  }
}

/** Waits until no backend of this database is idle in a transaction that touched `schema` (PostgreSQL ended it). */
async function writerEnded(schema: string): Promise<void> {
  const client = await admin();
  try {
    for (;;) {
      const { rows } = await client.query<{ n: string }>(
        "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction' AND strpos(query, $1) > 0",
        [schema],
      );
      if (Number(rows[0]!.n) === 0) return;
      await sleep(10);
    }
  } finally {
    await client.end();
  }
}

/** Collects a session's changes; `until` waits for a predicate over them. */
function record(store: PostgresSessionStore, sessionId: string) {
  const changes: SessionChange[] = [];
  const unsubscribe = store.subscribe(sessionId, (change) => changes.push(change));
  const until = async (done: (changes: SessionChange[]) => boolean, timeoutMs = 5000) => {
    const deadline = Date.now() + timeoutMs;
    while (!done(changes)) {
      if (Date.now() > deadline) throw new Error(`timed out; got ${JSON.stringify(changes)}`);
      await sleep(10);
    }
  };
  /** Waits until no change has come for `quietMs` (what is still on its way, such as a replay after a reconnect, has arrived). */
  const settled = async (quietMs = 200) => {
    let seen = -1;
    while (seen !== changes.length) {
      seen = changes.length;
      await sleep(quietMs);
    }
  };
  return { changes, until, settled, unsubscribe };
}

describe("two nodes take one start at once", () => {
  it("the same attempt (a client's exact retry racing its original at another node): one node creates the session, the other finds the attempt, never idempotency-conflict", async () => {
    const [a, b] = await pair();
    const original = session({ idempotencyKey: "raced" });
    const attempt = startAttempt(original);
    const blocker = await admin();
    try {
      // A's transaction stops after inserting the session row, before its attempt row.
      await blocker.query("BEGIN");
      await blocker.query(`LOCK TABLE ${a.schema}.attempts IN EXCLUSIVE MODE`);
      const atA = a.createSession(original, [], attempt);
      await lockWaiters(1);
      // B checks (nothing committed yet), inserts, and waits on A's uncommitted row.
      const replay = session({ idempotencyKey: "raced" });
      const atB = b.createSession(replay, [], { ...attempt, sessionId: replay.sessionId });
      await lockWaiters(2);
      await blocker.query("COMMIT");
      expect(await atA).toEqual({ kind: "created" });
      expect(await atB).toEqual({ kind: "attempt-exists" });
    } finally {
      await blocker.end();
    }
  });

  it("another attempt with the same key, racing: idempotency-conflict", async () => {
    const [a, b] = await pair();
    const first = session({ idempotencyKey: "raced" });
    const blocker = await admin();
    try {
      await blocker.query("BEGIN");
      await blocker.query(`LOCK TABLE ${a.schema}.attempts IN EXCLUSIVE MODE`);
      const atA = a.createSession(first, [], startAttempt(first));
      await lockWaiters(1);
      const second = session({ idempotencyKey: "raced" });
      const atB = b.createSession(second, [], startAttempt(second));
      await lockWaiters(2);
      await blocker.query("COMMIT");
      expect(await atA).toEqual({ kind: "created" });
      expect(await atB).toEqual({ kind: "idempotency-conflict" });
    } finally {
      await blocker.end();
    }
  });
});

describe("owners and leases", () => {
  it("is a ClusterSessionStore; the creating node owns the session", async () => {
    const [a, b] = await pair();
    expect(isClusterStore(a)).toBe(true);
    const s = session();
    await a.createSession(s, [], startAttempt(s));
    expect(await b.ownerOf(s.sessionId)).toBe("node-a");
    expect(await b.ownerOf(randomUUID())).toBeUndefined();
  });

  it("claims running sessions whose owner's lease expired or that have no lease row, never finished ones or live owners'", async () => {
    const [a, b] = await pair();
    const c = await connect({ schema: a.schema, nodeId: "node-c" }); // never heartbeats
    await a.heartbeat(60_000);
    await b.heartbeat(60_000);
    const ofA = session({ idempotencyKey: "a" });
    const ofB = session({ idempotencyKey: "b" });
    const ofC = session({ idempotencyKey: "c" });
    const done = session({ idempotencyKey: "done" });
    await a.createSession(ofA, [], startAttempt(ofA));
    await b.createSession(ofB, [], startAttempt(ofB));
    await c.createSession(ofC, [], startAttempt(ofC));
    await a.createSession(done, [], startAttempt(done));
    await a.finish(done.sessionId, "{}", 1);
    // c has no lease row: its session is an orphan at once; a's lease is live.
    expect(await b.claimOrphans()).toEqual([ofC.sessionId]);
    // A short lease (200 ms) that then runs out.
    await a.heartbeat(200);
    await sleep(300);
    expect(await b.claimOrphans()).toEqual([ofA.sessionId]);
    expect(await b.ownerOf(ofA.sessionId)).toBe("node-b");
    expect(await b.ownerOf(done.sessionId)).toBe("node-a");
    expect(await b.claimOrphans()).toEqual([]);
    // A node without a live lease of its own claims nothing.
    expect(await c.claimOrphans()).toEqual([]);
  });

  it("exactly one of two concurrent claimers gets each orphan", async () => {
    const [a, b] = await pair();
    const dead = await connect({ schema: a.schema, nodeId: "node-dead" });
    await dead.heartbeat(150);
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      const s = session({ idempotencyKey: `k${i}` });
      ids.push(s.sessionId);
      void dead.createSession(s, [], startAttempt(s));
    }
    await dead.close();
    await a.heartbeat(60_000);
    await b.heartbeat(60_000);
    await sleep(200);
    const rounds = await Promise.all([a.claimOrphans(), b.claimOrphans(), a.claimOrphans(), b.claimOrphans()]);
    const claimed = rounds.flat();
    expect(claimed.sort()).toEqual([...ids].sort());
    expect(new Set(claimed).size).toBe(ids.length);
    const byA = new Set([...(rounds[0] ?? []), ...(rounds[2] ?? [])]);
    for (const id of ids) expect(await a.ownerOf(id)).toBe(byA.has(id) ? "node-a" : "node-b");
  });

  it("leave drops the lease: the node's sessions become orphans", async () => {
    const [a, b] = await pair();
    await a.heartbeat(60_000);
    await b.heartbeat(60_000);
    const s = session();
    await a.createSession(s, [], startAttempt(s));
    expect(await b.claimOrphans()).toEqual([]);
    await a.leave();
    expect(await b.claimOrphans()).toEqual([s.sessionId]);
    await expect(a.heartbeat(0)).rejects.toThrow(RangeError);
  });

  it("a heartbeat says when another process renewed the node id's lease since this one's last: two processes with one id notice each other", async () => {
    const [a] = await pair();
    const twin = await connect({ schema: a.schema, nodeId: a.nodeId });
    try {
      // A first heartbeat reports nothing: the process before may simply have died with its lease live.
      expect(await a.heartbeat(60_000)).toEqual({ otherProcess: false });
      expect(await twin.heartbeat(60_000)).toEqual({ otherProcess: false });
      expect(await a.heartbeat(60_000)).toEqual({ otherProcess: true });
      expect(await a.heartbeat(60_000)).toEqual({ otherProcess: false });
      expect(await twin.heartbeat(60_000)).toEqual({ otherProcess: true });
      // A database without the column (a role that could not add it): heartbeats go on, reporting nothing.
      const db = await admin();
      await db.query(`ALTER TABLE ${a.schema}.nodes DROP COLUMN incarnation`);
      await db.end();
      expect(await a.heartbeat(60_000)).toEqual({ otherProcess: false });
      expect(await twin.heartbeat(60_000)).toEqual({ otherProcess: false });
      expect(await a.heartbeat(60_000)).toEqual({ otherProcess: false });
    } finally {
      await twin.close();
    }
  });
});

describe("rows of nodes that never left", () => {
  it("a store's open deletes the rows of nodes whose lease lapsed over a day ago and that own no running session; the others stay", async () => {
    const [a, b] = await pair();
    await a.heartbeat(60_000);
    await b.heartbeat(60_000);
    // b crashed long ago and still owns a running session; a crashed long ago owning none.
    const s = session();
    await b.createSession(s, [], startAttempt(s));
    const db = await admin();
    try {
      const lapsed = (seconds: number) => `clock_timestamp() - make_interval(secs => ${seconds})`;
      await db.query(`UPDATE ${a.schema}.nodes SET lease_expires_at = ${lapsed(GONE_NODE_SECONDS + 60)}`);
      await db.query(
        `INSERT INTO ${a.schema}.nodes (node_id, lease_expires_at) VALUES ('lapsed-lately', ${lapsed(GONE_NODE_SECONDS - 600)})`,
      );
      const nodes = async () =>
        (await db.query<{ node_id: string }>(`SELECT node_id FROM ${a.schema}.nodes ORDER BY node_id`)).rows.map((row) => row.node_id);
      expect(await nodes()).toEqual(["lapsed-lately", "node-a", "node-b"]);

      const c = await connect({ schema: a.schema, nodeId: "node-c" });
      expect(await nodes()).toEqual(["lapsed-lately", "node-b"]);
      // The session of the gone node is claimed as before, and its row then goes at a later open.
      await c.heartbeat(60_000);
      expect(await c.claimOrphans()).toEqual([s.sessionId]);
      await c.finish(s.sessionId, '{"kind":"success"}', 1000, 2n);
      await connect({ schema: a.schema, nodeId: "node-d" });
      expect(await nodes()).toEqual(["lapsed-lately", "node-c"]);
    } finally {
      await db.end();
    }
  });
});

clusterFencingContract({ describe, it, expect }, "fencing", pair);

describe("fencing across a schema upgrade", () => {
  it("a database of schema version 2 gets ownership epochs at open: its running sessions are at epoch 1, a claim moves them on and fences the former owner", async () => {
    const schema = freshSchema();
    const old = await connect({ schema, nodeId: "node-a" });
    await old.heartbeat(60_000);
    const s = session();
    const out = stream(s.sessionId, "output");
    await old.createSession(s, [out], startAttempt(s));
    await old.appendOutput(
      { event: "item", streamId: out.streamId, sequence: 0n, itemCount: 1n, data: bytes("x"), mimeType: undefined },
      [],
    );
    await old.close();
    const client = await admin();
    try {
      // Down through version 5 (commit markers) and 4 (the journal) to version 2.
      await client.query(`DROP TABLE ${schema}.writer_groups; DROP TABLE ${schema}.journal; DROP TABLE ${schema}.session_runs;
        ALTER TABLE ${schema}.sessions DROP COLUMN owner_epoch; ALTER TABLE ${schema}.streams DROP COLUMN owner_epoch;
        DELETE FROM ${schema}.schema_migrations WHERE version >= 3`);
    } finally {
      await client.end();
    }
    const a = await connect({ schema, nodeId: "node-a" });
    const b = await connect({ schema, nodeId: "node-b" });
    expect(await a.ownership(s.sessionId)).toEqual({ nodeId: "node-a", epoch: 1n });
    await a.appendOutput(
      { event: "item", streamId: out.streamId, sequence: 1n, itemCount: 1n, data: bytes("y"), mimeType: undefined },
      [],
      1n,
    );
    await a.leave();
    await b.heartbeat(60_000);
    expect(await b.claimOrphans()).toEqual([s.sessionId]);
    await expect(
      a.appendOutput({ event: "item", streamId: out.streamId, sequence: 2n, itemCount: 1n, data: bytes("z"), mimeType: undefined }, [], 1n),
    ).rejects.toMatchObject({
      code: "ownership-lost",
    });
    await b.appendOutput({ event: "terminal", streamId: out.streamId, sequence: 2n, outcome: "{}" }, [], 2n);
    expect((await b.readOutput(out.streamId, 0n, 10)).map((e) => e.event)).toEqual(["item", "item", "terminal"]);
  });
});

describe("the journal across a schema upgrade", () => {
  it("a database of schema version 3 gets the journal at open: a claimed session's journal and run count are written at its epoch, the former owner's refused", async () => {
    const schema = freshSchema();
    const old = await connect({ schema, nodeId: "node-a" });
    await old.heartbeat(60_000);
    const s = session();
    await old.createSession(s, [], startAttempt(s));
    await old.close();
    const client = await admin();
    try {
      await client.query(
        `DROP TABLE ${schema}.writer_groups; DROP TABLE ${schema}.journal; DROP TABLE ${schema}.session_runs; DELETE FROM ${schema}.schema_migrations WHERE version >= 4`,
      );
    } finally {
      await client.end();
    }
    const a = await connect({ schema, nodeId: "node-a" });
    const b = await connect({ schema, nodeId: "node-b" });
    const entry = (position: number, outcome: string) => ({ sessionId: s.sessionId, position, name: "step", outcome });
    await a.appendJournal(entry(0, '{"value":0}'), 1n);
    await a.leave();
    await b.heartbeat(60_000);
    expect(await b.claimOrphans()).toEqual([s.sessionId]);
    await expect(a.appendJournal(entry(1, '{"value":"a"}'), 1n)).rejects.toMatchObject({ code: "ownership-lost" });
    expect(await b.recordRun(s.sessionId, 2n, 1n)).toEqual({ run: 2, withoutProgress: 0 });
    await b.appendJournal(entry(1, '{"value":"b"}'), 2n);
    expect((await b.readJournal(s.sessionId)).map((e) => e.outcome)).toEqual(['{"value":0}', '{"value":"b"}']);
  });
});

describe("a claim racing the former owner's journal and run count", () => {
  it.each(["appendJournal", "recordRun"] as const)(
    "%s at the old epoch, not yet committed, keeps a claim off the session until it commits: the claimer then sees it",
    async (write) => {
      const [a, b] = await pair();
      await a.heartbeat(60_000);
      const s = session();
      await a.createSession(s, [], startAttempt(s));
      await a.leave(); // A's lease is gone; its transaction below is still open
      await b.heartbeat(60_000);
      const sql = statements(a.schema);
      const owner = await admin();
      try {
        // A's group transaction, stalled after its statement and before its commit.
        await owner.query("BEGIN");
        if (write === "appendJournal") await owner.query(sql.appendJournal, [s.sessionId, 0, "step", '{"value":"a"}', "1"]);
        else await owner.query(sql.recordRunWithProgress, [s.sessionId, "1", "3"]);
        // The claim cannot pass the owner's uncommitted write: it leaves the session for later.
        expect(await b.claimOrphans()).toEqual([]);
        await owner.query("COMMIT");
        expect(await b.claimOrphans()).toEqual([s.sessionId]);
      } finally {
        await owner.end();
      }
      if (write === "appendJournal") expect((await b.readJournal(s.sessionId)).map((e) => e.outcome)).toEqual(['{"value":"a"}']);
      else expect(await b.recordRun(s.sessionId, 2n, 3n)).toEqual({ run: 3, withoutProgress: 1 });
    },
  );
});

describe("a claim beside a former owner's open transaction", () => {
  it("claims the other orphans at once and leaves the session whose rows that transaction holds for a later claim", async () => {
    const schema = freshSchema();
    const [a, b, c] = await Promise.all(["node-a", "node-b", "node-c"].map((nodeId) => connect({ schema, nodeId })));
    await Promise.all([a!.heartbeat(60_000), c!.heartbeat(60_000)]);
    const atA = session({ idempotencyKey: "at-a" });
    const outputAtA = stream(atA.sessionId, "output");
    await a!.createSession(atA, [outputAtA], startAttempt(atA));
    const atC = session({ idempotencyKey: "at-c" });
    await c!.createSession(atC, [stream(atC.sessionId, "output")], startAttempt(atC));
    await Promise.all([a!.leave(), c!.leave()]); // both leases gone; A is only stalled
    await b!.heartbeat(60_000);
    const owner = await admin();
    try {
      // A's write, stalled before its commit, holds its stream's row.
      await owner.query("BEGIN");
      await owner.query(`UPDATE ${schema}.streams SET count = count WHERE stream_id = $1`, [outputAtA.streamId]);
      const claim = b!.claimOrphans();
      const first = await Promise.race([claim.then(() => "claimed"), lockWaiters(1, schema).then(() => "waits")]);
      expect(first).toBe("claimed");
      expect(await claim).toEqual([atC.sessionId]);
      expect(await b!.ownership(atA.sessionId)).toMatchObject({ nodeId: "node-a" });
    } finally {
      await owner.query("ROLLBACK");
      await owner.end();
    }
    expect(await b!.claimOrphans()).toEqual([atA.sessionId]);
    expect(await b!.ownership(atA.sessionId)).toEqual({ nodeId: "node-b", epoch: 2n });
  });
});

describe("a former owner stalled inside its write transaction", () => {
  it("is ended by PostgreSQL after idleInTransactionTimeoutMs: the claim it held goes through, and its write fails", async () => {
    const schema = freshSchema();
    const a = await connect({ schema, nodeId: "node-a", idleInTransactionTimeoutMs: 300 });
    const b = await connect({ schema, nodeId: "node-b" });
    await a.heartbeat(60_000);
    const s = session();
    await a.createSession(s, [], startAttempt(s));
    // A's writer stalls before its next COMMIT (a frozen process): its transaction stays open on the server.
    const query = pg.Client.prototype.query;
    let stalled!: () => void;
    const reachedCommit = new Promise<void>((resolve) => (stalled = resolve));
    let resume!: () => void;
    const resumed = new Promise<void>((resolve) => (resume = resolve));
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      if (typeof args[0] === "string" && /COMMIT$/.test(args[0])) {
        pg.Client.prototype.query = query;
        stalled();
        // Sent once the process goes on, after the claim.
        return resumed.then(() => (query as (...a: unknown[]) => unknown).apply(this, args));
      }
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
    let write: Promise<unknown>;
    try {
      write = a.appendJournal({ sessionId: s.sessionId, position: 0, name: "step", outcome: '{"value":"a"}' }, 1n);
      void write.catch(() => undefined);
      await reachedCommit;
    } finally {
      pg.Client.prototype.query = query;
    }
    await a.leave();
    await b.heartbeat(60_000);
    // A claim leaves the session alone while A's transaction holds its row; once PostgreSQL has
    // ended that idle transaction (A's connection is gone), a claim takes it.
    expect(await b.claimOrphans()).toEqual([]);
    await writerEnded(a.schema);
    expect(await b.claimOrphans()).toEqual([s.sessionId]);
    expect(await b.readJournal(s.sessionId)).toEqual([]);
    // A goes on: its transaction is gone, and its write fails instead of landing after the claim.
    resume();
    await expect(write).rejects.toThrow();
    expect(await b.readJournal(s.sessionId)).toEqual([]);
  });
});

describe("writers of several nodes", () => {
  it("a group that PostgreSQL picks as a deadlock victim commits the writes before the victim and retries it and the rest, in order", async () => {
    const [a] = await pair();
    const x = session({ idempotencyKey: "x" });
    const y = session({ idempotencyKey: "y" });
    await a.createSession(x, [], startAttempt(x));
    await a.createSession(y, [], startAttempt(y));
    // Another node's transaction holds Y and will want X, which A's group takes first.
    const other = await admin();
    try {
      await other.query("BEGIN");
      await other.query(`SELECT 1 FROM ${a.schema}.sessions WHERE session_id = $1 FOR UPDATE`, [y.sessionId]);
      // One group: finish X (locks X), finish Y (waits on the other transaction).
      const finishes = [a.finish(x.sessionId, '{"kind":"success"}', 1), a.finish(y.sessionId, '{"kind":"success"}', 2)];
      // A's group holds X and waits on Y.
      await lockWaiters(1, a.schema);
      // The cycle: A waited first, so A's deadlock check finds it and A's write on Y is the victim.
      await other.query(`UPDATE ${a.schema}.sessions SET finished_at = 0 WHERE session_id = $1`, [x.sessionId]);
      await other.query("COMMIT");
      await Promise.all(finishes);
    } finally {
      await other.end();
    }
    // The retry path ran: without the deadlock, Y's write would have committed on its first try.
    expect(a.transientRetries).toBe(1);
    expect((await a.getSession(x.sessionId))?.state).toBe("finished");
    expect(await a.getSession(y.sessionId)).toMatchObject({ state: "finished", finishedAt: 2 });
  }, 15_000);
});

describe("change feed", () => {
  it("delivers every write's change to both nodes after commit, in commit order", async () => {
    const [a, b] = await pair();
    const s = session();
    const input = stream(s.sessionId, "input");
    await a.createSession(s, [input], startAttempt(s));
    const atA = record(a, s.sessionId);
    const atB = record(b, s.sessionId);
    // Read at delivery time on B: the write is committed when its change arrives.
    let countSeen: bigint | undefined;
    const reading = new Promise<void>((resolve) => {
      const stop = b.subscribe(s.sessionId, (change) => {
        if (change.kind !== "input") return;
        stop();
        void b.getStream(input.streamId).then((x) => {
          countSeen = x?.count;
          resolve();
        });
      });
    });
    const out = stream(s.sessionId, "output", { parent: { kind: "result" } });
    await a.acceptInput({ streamId: input.streamId, sequence: 0n, itemCount: 1n, data: bytes("a"), mimeType: undefined }, []);
    await reading;
    expect(countSeen).toBe(1n);
    await a.endInput(input.streamId, { kind: "end" });
    await b.setResult(s.sessionId, '{"kind":"none"}', [out]);
    await Promise.all([
      a.appendOutput({ event: "item", streamId: out.streamId, sequence: 0n, itemCount: 1n, data: bytes("x"), mimeType: undefined }, []),
      a.appendOutput({ event: "terminal", streamId: out.streamId, sequence: 1n, outcome: "{}" }, []),
    ]);
    expect(
      await b.attach(
        { attemptId: randomUUID(), operation: "takeover", descriptorDigest: "t", sessionId: s.sessionId, generation: 2n },
        "gai1_2",
        undefined,
      ),
    ).toMatchObject({ kind: "attached" });
    await a.finish(s.sessionId, "{}", 9);
    // Repeats in a row are folded: identical notifications of one transaction are coalesced by
    // PostgreSQL, so the two appends (maybe one group) give one or two output changes.
    const expected: SessionChange[] = [
      { kind: "input", streamId: input.streamId },
      { kind: "result" },
      { kind: "output", streamId: out.streamId },
      { kind: "attached", generation: "2" },
      { kind: "finished" },
    ];
    const settled = (changes: SessionChange[]) => changes.some((c) => c.kind === "finished");
    await atA.until(settled);
    await atB.until(settled);
    const dedupe = (changes: SessionChange[]) => changes.filter((c, i) => i === 0 || JSON.stringify(c) !== JSON.stringify(changes[i - 1]));
    expect(atA.changes.filter((c) => c.kind === "input")).toHaveLength(2); // the chunk, the end
    expect(dedupe(atA.changes)).toEqual(expected);
    expect(dedupe(atB.changes)).toEqual(expected);
  });

  it("a write that fails or changes nothing publishes nothing", async () => {
    const [a, b] = await pair();
    const s = session();
    const input = stream(s.sessionId, "input");
    await a.createSession(s, [input], startAttempt(s));
    const atB = record(b, s.sessionId);
    const clash = stream(s.sessionId, "input", { streamId: input.streamId });
    await expect(
      a.acceptInput({ streamId: input.streamId, sequence: 0n, itemCount: 1n, data: bytes("a"), mimeType: undefined }, [clash]),
    ).rejects.toThrow();
    await expect(
      a.acceptInput({ streamId: input.streamId, sequence: 7n, itemCount: 1n, data: bytes("a"), mimeType: undefined }, []),
    ).rejects.toThrow();
    await a.finish(randomUUID(), "{}", 1); // no such session: no change
    await a.publish(s.sessionId, { kind: "delivered", streamId: "marker", events: 1, bytes: 3 });
    await atB.until((changes) => changes.length > 0);
    expect(atB.changes).toEqual([{ kind: "delivered", streamId: "marker", events: 1, bytes: 3 }]);
  });

  it("publish reaches the subscribers on both nodes; unsubscribe stops delivery; other sessions are not told", async () => {
    const [a, b] = await pair();
    const sessionId = randomUUID();
    const atA = record(a, sessionId);
    const atB = record(b, sessionId);
    const elsewhere = record(b, randomUUID());
    const cancel: SessionChange = { kind: "cancel", streamId: "s1", reason: "consumer-drop" };
    await b.publish(sessionId, cancel);
    await atA.until((c) => c.length === 1);
    await atB.until((c) => c.length === 1);
    expect(atA.changes).toEqual([cancel]);
    atA.unsubscribe();
    await a.publish(sessionId, { kind: "result" });
    await atB.until((c) => c.length === 2);
    await sleep(50);
    expect(atA.changes).toHaveLength(1);
    expect(elsewhere.changes).toEqual([]);
  });

  it("after its LISTEN connection is terminated, the feed reconnects, re-notifies subscribers from the store and keeps delivering", async () => {
    const [a, b] = await pair();
    const s = session();
    const input = stream(s.sessionId, "input");
    await a.createSession(s, [input], startAttempt(s));
    const atB = record(b, s.sessionId);
    const client = await admin();
    try {
      const { rows } = await client.query<{ killed: boolean }>(
        "SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE query ILIKE $1 AND datname = current_database()",
        [`LISTEN%${b.channel}%`],
      );
      expect(rows.filter((r) => r.killed).length).toBeGreaterThanOrEqual(2); // both stores listen on the channel
    } finally {
      await client.end();
    }
    // Written while the listeners are down: reported by the re-notification.
    await a.acceptInput({ streamId: input.streamId, sequence: 0n, itemCount: 1n, data: bytes("a"), mimeType: undefined }, []);
    await atB.until(() => b.listenerReconnects > 0 && atB.changes.some((c) => c.kind === "input"));
    // On a loaded machine the listener can be back before the write: its own notification is the
    // "input" seen, and the replay (attached, then each stream) is still being read from the store.
    await atB.settled();
    expect(atB.changes).toContainEqual({ kind: "attached", generation: "1" });
    atB.changes.length = 0;
    await a.endInput(input.streamId, { kind: "end" });
    await atB.until((c) => c.length > 0);
    expect(atB.changes).toEqual([{ kind: "input", streamId: input.streamId }]);
  });
});

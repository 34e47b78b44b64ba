/**
 * What the contract suite does not cover: savepoints per write, tombstones,
 * exact bigints, bounds on reads, migrations (concurrent, versioned), the
 * lifecycle of a store.
 */
import { afterAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import pg from "pg";
import { bytes, session, startAttempt, stream } from "@golem-stream/server/testing";
import { PostgresSessionStore, SCHEMA_VERSION } from "../src/index.js";
import { DROP_BATCH_TOMBSTONES, PURGE_BATCH_ITEMS, PURGE_BATCH_SESSIONS } from "../src/retention.js";
import { admin, cleanUp, connect, freshSchema, pgUrl } from "./support/stores.js";

afterAll(cleanUp);

describe("writes", () => {
  it("group-commits writes issued together; one failing write rolls back alone", async () => {
    const store = await connect();
    const s = session();
    const input = stream(s.sessionId, "input");
    await store.createSession(s, [input], startAttempt(s));
    const writes = [
      store.acceptInput({ streamId: input.streamId, sequence: 0n, itemCount: 1n, data: bytes("a"), mimeType: undefined }, []),
      store.acceptInput({ streamId: input.streamId, sequence: 5n, itemCount: 1n, data: bytes("x"), mimeType: undefined }, []),
      store.acceptInput({ streamId: input.streamId, sequence: 1n, itemCount: 1n, data: bytes("b"), mimeType: undefined }, []),
    ];
    expect((await Promise.allSettled(writes)).map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((await store.getStream(input.streamId))?.count).toBe(2n);
    expect((await store.readInput(input.streamId, 0n, 10n)).map((c) => c.sequence)).toEqual([0n, 1n]);
  });

  it("a write whose last statement fails rolls back its earlier statements, and only those", async () => {
    const store = await connect();
    const s = session();
    const input = stream(s.sessionId, "input");
    await store.createSession(s, [input], startAttempt(s));
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
  });

  it("a burst of a thousand appends not awaited one by one commits in order", async () => {
    const store = await connect();
    const s = session();
    await store.createSession(s, [], startAttempt(s));
    const out = stream(s.sessionId, "output", { parent: { kind: "result" } });
    await store.setResult(s.sessionId, '{"kind":"none"}', [out]);
    const writes = Array.from({ length: 1000 }, (_, i) =>
      store.appendOutput(
        { event: "item", streamId: out.streamId, sequence: BigInt(i), itemCount: 1n, data: bytes(`#${i}`), mimeType: undefined },
        [],
      ),
    );
    writes.push(store.appendOutput({ event: "terminal", streamId: out.streamId, sequence: 1000n, outcome: '{"kind":"ok"}' }, []));
    await Promise.all(writes);
    const events = await store.readOutput(out.streamId, 0n, 2000);
    expect(events).toHaveLength(1001);
    expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: 1001 }, (_, i) => BigInt(i)));
    expect(events.at(-1)?.event).toBe("terminal");
  });

  it("appends issued together are written as runs; a write that does not continue fails alone, before, inside or after a run", async () => {
    const store = await connect();
    const s = session();
    const input = stream(s.sessionId, "input");
    await store.createSession(s, [input], startAttempt(s));
    const chunk = (sequence: number, text: string, mimeType?: string) =>
      store.acceptInput(
        { streamId: input.streamId, sequence: BigInt(sequence), itemCount: BigInt(text.length), data: bytes(text), mimeType },
        [],
      );
    const outcomes = await Promise.allSettled([
      chunk(5, "zz"), // does not continue: fails alone, then the run from 0 goes on
      chunk(0, "ab"),
      chunk(2, "cde", "text/plain"),
      chunk(5, "f"),
      chunk(9, "x"), // a gap inside the burst: fails alone
      chunk(6, "gh"),
      chunk(8, "i"),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual([
      "rejected",
      "fulfilled",
      "fulfilled",
      "fulfilled",
      "rejected",
      "fulfilled",
      "fulfilled",
    ]);
    const held = await store.readInput(input.streamId, 0n, 9n);
    expect(held.map((c) => [c.sequence, new TextDecoder().decode(c.data), c.mimeType])).toEqual([
      [0n, "ab", undefined],
      [2n, "cde", "text/plain"],
      [5n, "f", undefined],
      [6n, "gh", undefined],
      [8n, "i", undefined],
    ]);
    expect((await store.getStream(input.streamId))?.count).toBe(9n);
    // A run that starts where the stream is not is written one by one: every write fails on its own.
    const stale = await Promise.allSettled([chunk(3, "q"), chunk(4, "r")]);
    expect(stale.map((o) => o.status)).toEqual(["rejected", "rejected"]);
    expect((await store.getStream(input.streamId))?.count).toBe(9n);
  });

  /** Every query text the writer connection sends while `work` runs (the writer: the connection that sends `first`). */
  async function writerQueries(first: RegExp, work: () => Promise<unknown>): Promise<string[]> {
    const sent: string[] = [];
    const query = pg.Client.prototype.query;
    let writer: unknown;
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      const text = typeof args[0] === "string" ? args[0] : "";
      if (first.test(text)) writer = this;
      if (writer === this) sent.push(text);
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
    try {
      await work();
    } finally {
      pg.Client.prototype.query = query;
    }
    return sent;
  }

  it("a group of appends, one run per stream, takes one round trip: one statement outside a transaction block", async () => {
    const store = await connect();
    const s = session();
    const input = stream(s.sessionId, "input");
    await store.createSession(s, [input], startAttempt(s));
    const out = stream(s.sessionId, "output", { parent: { kind: "result" } });
    const changes: string[] = [];
    store.subscribe(s.sessionId, (change) => changes.push(JSON.stringify(change)));
    await store.setResult(s.sessionId, '{"kind":"none"}', [out]);
    await expect.poll(() => changes).toEqual([JSON.stringify({ kind: "result" })]);
    changes.length = 0;
    const sent = await writerQueries(/^(BEGIN|WITH moved)/, () =>
      Promise.all([
        ...["ab", "cde", "f"].map((text, i) =>
          store.acceptInput(
            {
              streamId: input.streamId,
              sequence: BigInt([0, 2, 5][i]!),
              itemCount: BigInt(text.length),
              data: bytes(text),
              mimeType: undefined,
            },
            [],
          ),
        ),
        store.appendOutput(
          { event: "item", streamId: out.streamId, sequence: 0n, itemCount: 1n, data: bytes("z"), mimeType: undefined },
          [],
        ),
      ]),
    );
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(/^WITH moved AS/);
    expect((await store.readInput(input.streamId, 0n, 6n)).map((c) => new TextDecoder().decode(c.data)).join("")).toBe("abcdef");
    expect((await store.readOutput(out.streamId, 0n, 10)).map((e) => e.sequence)).toEqual([0n]);
    await expect
      .poll(() => changes)
      .toEqual([JSON.stringify({ kind: "input", streamId: input.streamId }), JSON.stringify({ kind: "output", streamId: out.streamId })]);
  });

  it("a group with other writes than appends takes three round trips per run: BEGIN with the SAVEPOINT, the run, the RELEASE and notifications with COMMIT", async () => {
    const store = await connect();
    const s = session();
    const input = stream(s.sessionId, "input");
    await store.createSession(s, [input], startAttempt(s));
    const sent = await writerQueries(/^BEGIN/, () =>
      Promise.all([
        ...["ab", "cde", "f"].map((text, i) =>
          store.acceptInput(
            {
              streamId: input.streamId,
              sequence: BigInt([0, 2, 5][i]!),
              itemCount: BigInt(text.length),
              data: bytes(text),
              mimeType: undefined,
            },
            [],
          ),
        ),
        store.endInput(input.streamId, { kind: "end" }),
      ]),
    );
    // The commit marker and the transaction's id come with the BEGIN (no round trip of their own), for a COMMIT whose answer is lost.
    expect(sent[0]).toMatch(
      /^BEGIN; INSERT INTO t_[0-9a-f]+\.writer_groups \(writer, group_seq\) VALUES \('[0-9a-f-]{36}', \d+\) ON CONFLICT \(writer\) DO UPDATE SET group_seq = excluded\.group_seq, written_at = now\(\) RETURNING pg_current_xact_id\(\)::text AS xid; SAVEPOINT run$/,
    );
    expect(sent.at(-1)).toMatch(
      /; SELECT pg_notify\('[^']+', note\) FROM unnest\(ARRAY\['[^']+'(, '[^']+')*\]::text\[\]\) AS note; COMMIT$/,
    );
    expect((await store.readInput(input.streamId, 0n, 6n)).map((c) => new TextDecoder().decode(c.data)).join("")).toBe("abcdef");
    expect((await store.getStream(input.streamId))?.inputTerminal).toEqual({ kind: "end" });
  });

  it("in a group of appends of several streams, a run that does not continue its stream fails on its own and notifies nothing; the others commit", async () => {
    const store = await connect();
    const s = session();
    const [a, b] = [stream(s.sessionId, "input"), stream(s.sessionId, "input")];
    await store.createSession(s, [a, b], startAttempt(s));
    const changes: string[] = [];
    store.subscribe(s.sessionId, (change) => changes.push(JSON.stringify(change)));
    await store.acceptInput({ streamId: b.streamId, sequence: 0n, itemCount: 1n, data: bytes("b"), mimeType: undefined }, []);
    await expect.poll(() => changes).toHaveLength(1);
    changes.length = 0;
    const chunk = (streamId: string, sequence: bigint, text: string) =>
      store.acceptInput({ streamId, sequence, itemCount: 1n, data: bytes(text), mimeType: undefined }, []);
    const outcomes = await Promise.allSettled([
      chunk(a.streamId, 0n, "x"),
      chunk(b.streamId, 0n, "stale"),
      chunk(a.streamId, 1n, "y"),
      chunk(b.streamId, 1n, "c"),
    ]);
    // b's run starts where b is not: written again one by one, its first fails, its second continues.
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled", "fulfilled"]);
    expect((await store.readInput(a.streamId, 0n, 2n)).map((c) => new TextDecoder().decode(c.data)).join("")).toBe("xy");
    expect((await store.readInput(b.streamId, 0n, 2n)).map((c) => new TextDecoder().decode(c.data)).join("")).toBe("bc");
    await expect
      .poll(() => changes)
      .toEqual([JSON.stringify({ kind: "input", streamId: a.streamId }), JSON.stringify({ kind: "input", streamId: b.streamId })]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(changes).toHaveLength(2);
  });

  it("a burst of small appends shares one group beyond 512 writes (up to 4096); other writes keep groups of 512", async () => {
    const store = await connect();
    const s = session();
    const input = stream(s.sessionId, "input");
    await store.createSession(s, [input], startAttempt(s));
    const groups: number[] = [];
    store.observeCommits((_, writes) => groups.push(writes));
    const appends = Array.from({ length: 3000 }, (_, i) =>
      store.acceptInput({ streamId: input.streamId, sequence: BigInt(i), itemCount: 1n, data: bytes("a"), mimeType: undefined }, []),
    );
    await Promise.all(appends);
    expect(groups).toEqual([3000]);
    groups.length = 0;
    // Appends of 64 KiB (above RUN_ROW_BYTES) are not small: 512 a group.
    const large = new Uint8Array(64 * 1024);
    await Promise.all(
      Array.from({ length: 600 }, (_, i) =>
        store.acceptInput({ streamId: input.streamId, sequence: BigInt(3000 + i), itemCount: 1n, data: large, mimeType: undefined }, []),
      ),
    );
    expect(groups).toEqual([512, 88]);
    expect((await store.getStream(input.streamId))?.count).toBe(3600n);
  });

  it("a write issued in the microtasks where the writer finds its queue empty is still committed (no lost wake-up)", async () => {
    const store = await connect();
    const s = session();
    const input = stream(s.sessionId, "input");
    await store.createSession(s, [input], startAttempt(s));
    const append = (sequence: bigint) =>
      store.acceptInput({ streamId: input.streamId, sequence, itemCount: 1n, data: bytes("a"), mimeType: undefined }, []);
    // Each round issues a write a few microtasks after the previous one resolved: one of them
    // lands after the writer's loop saw an empty queue and before it marked itself idle (what the
    // cluster tests did when a change arrived before the writer had read its COMMIT). A write lost
    // there waits for the next write forever: the race names it instead of the test's timeout.
    let sequence = 0n;
    for (let hops = 0; hops < 6; hops++) {
      await append(sequence++);
      for (let i = 0; i < hops; i++) await Promise.resolve();
      const outcome = await Promise.race([
        append(sequence++).then(() => "committed"),
        new Promise<string>((resolve) => setTimeout(resolve, 15_000, "never started")),
      ]);
      expect({ hops, outcome }).toEqual({ hops, outcome: "committed" });
    }
    expect((await store.getStream(input.streamId))?.count).toBe(sequence);
  });

  it("keeps bigints exactly and payloads byte for byte", async () => {
    const store = await connect();
    const big = 2n ** 62n + 7n;
    const s = session({ generation: big, createdAt: 2 ** 52 + 1 });
    const input = stream(s.sessionId, "input");
    const child = stream(s.sessionId, "output", { parent: { kind: "item", streamId: input.streamId, sequence: big } });
    await store.createSession(s, [input, child], startAttempt(s, { generation: big }));
    expect(await store.getSession(s.sessionId)).toEqual(s);
    expect((await store.listStreams(s.sessionId))[1]?.parent).toEqual({ kind: "item", streamId: input.streamId, sequence: big });
    const data = Uint8Array.from({ length: 300_000 }, (_, i) => (i * 31) & 0xff);
    await store.acceptInput({ streamId: input.streamId, sequence: 0n, itemCount: big, data, mimeType: "application/x" }, []);
    const [chunk] = await store.readInput(input.streamId, big - 1n, big);
    expect(chunk?.itemCount).toBe(big);
    expect(chunk?.data).toEqual(data);
    expect((await store.getStream(input.streamId))?.count).toBe(big);
  });

  it("rejects reads with nonsensical bounds, clearly", async () => {
    const store = await connect();
    await expect(store.readOutput(randomUUID(), 0n, -1)).rejects.toThrow(/limit/);
    await expect(store.readOutput(randomUUID(), 0n, 1.5)).rejects.toThrow(/limit/);
    await expect(store.readOutput(randomUUID(), 0n, 10, Number.NaN)).rejects.toThrow(/maxBytes/);
    expect(await store.readOutput(randomUUID(), 0n, 0)).toEqual([]);
  });
});

describe("reads", () => {
  it("getSession and listStreams asked in the same turn take one round trip, whatever the session id holds", async () => {
    const store = await connect();
    const awkward = `it's \\ $' $& $1 -- ${randomUUID()}`;
    const s = session({ sessionId: awkward });
    const input = stream(s.sessionId, "input");
    await store.createSession(s, [input], startAttempt(s));
    const sent: string[] = [];
    const query = pg.Client.prototype.query;
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      sent.push(typeof args[0] === "string" ? args[0] : "");
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
    let both: [Awaited<ReturnType<typeof store.getSession>>, Awaited<ReturnType<typeof store.listStreams>>];
    try {
      both = await Promise.all([store.getSession(awkward), store.listStreams(awkward)]);
    } finally {
      pg.Client.prototype.query = query;
    }
    expect(sent).toHaveLength(1);
    expect(both[0]?.sessionId).toBe(awkward);
    expect(both[1].map((x) => x.streamId)).toEqual([input.streamId]);
    // Alone, and for a session that does not exist, as before.
    expect((await store.getSession(awkward))?.sessionId).toBe(awkward);
    expect(await Promise.all([store.getSession("missing"), store.listStreams("missing")])).toEqual([undefined, []]);
  });
});

describe("retention in batches", () => {
  it("a backlog larger than a batch is purged by several writes, each committed on its own, every session with its tombstones", async () => {
    const store = await connect();
    const backlog = Array.from({ length: PURGE_BATCH_SESSIONS * 2 + 7 }, (_, i) => session({ idempotencyKey: `key-${i}` }));
    await Promise.all(
      backlog.map(async (s) => {
        await store.createSession(s, [stream(s.sessionId, "input")], startAttempt(s));
        await store.finish(s.sessionId, '{"kind":"success"}', 5000);
      }),
    );
    const groups: number[] = [];
    store.observeCommits((_seconds, writes) => groups.push(writes));

    expect(await store.purgeFinished(6000, 10_000, 0)).toBe(backlog.length);

    // The tombstones' write, then one per batch: each its own commit, not one statement holding the writer.
    expect(groups).toEqual([1, 1, 1, 1]);
    const [first] = backlog;
    expect(await store.getSession(first!.sessionId)).toBeUndefined();
    expect(await store.createSession(first!, [], startAttempt(first!))).toEqual({ kind: "purged" });
    expect(await store.purgeFinished(6000, 10_000, 0)).toBe(0);
  });

  it("a batch stops short of its sessions once their logs hold a batch's items: sessions with long logs go a few at a time", async () => {
    const schema = freshSchema();
    const store = await connect({ schema });
    const long = Array.from({ length: 3 }, (_, i) => session({ idempotencyKey: `long-${i}` }));
    for (const s of long) {
      await store.createSession(s, [stream(s.sessionId, "input")], startAttempt(s));
      await store.finish(s.sessionId, '{"kind":"success"}', 5000);
    }
    const client = await admin();
    try {
      // What the batches weigh is the streams' counts: each session as long as a whole batch.
      await client.query(`UPDATE ${schema}.streams SET count = ${PURGE_BATCH_ITEMS}`);
    } finally {
      await client.end();
    }
    const groups: number[] = [];
    store.observeCommits((_seconds, writes) => groups.push(writes));
    expect(await store.purgeFinished(6000, 10_000, 0)).toBe(3);
    // The tombstones' write, then one session per write.
    expect(groups).toEqual([1, 1, 1, 1]);
  });

  it("tombstones past their retention are dropped in batches too, every one of them", async () => {
    const schema = freshSchema();
    const store = await connect({ schema });
    const client = await admin();
    try {
      await client.query(`INSERT INTO ${schema}.tombstones (kind, key, stamped_at)
        SELECT 'attempt', 'a' || i, 1000 FROM generate_series(1, ${DROP_BATCH_TOMBSTONES + 3}) AS i`);
      const groups: number[] = [];
      store.observeCommits((_seconds, writes) => groups.push(writes));
      expect(await store.purgeFinished(0, 10_000, 2000)).toBe(0);
      // Two writes of tombstones, then the purge's one (nothing to purge).
      expect(groups).toEqual([1, 1, 1]);
      expect((await client.query(`SELECT count(*)::int AS n FROM ${schema}.tombstones`)).rows[0].n).toBe(0);
    } finally {
      await client.end();
    }
  });
});

describe("tombstones", () => {
  it("purging leaves the attempt ids and the idempotency scope; createSession answers purged until they are dropped", async () => {
    const store = await connect();
    const s = session();
    const attempt = startAttempt(s);
    await store.createSession(s, [], attempt);
    const resume = { attemptId: randomUUID(), operation: "resume" as const, descriptorDigest: "r", sessionId: s.sessionId, generation: 2n };
    expect(await store.attach(resume, "gai1_two", 1n)).toEqual({ kind: "attached", generation: 2n });
    await store.finish(s.sessionId, '{"kind":"success"}', 5000);
    expect(await store.purgeFinished(6000, 10_000, 0)).toBe(1);

    // The same attempt id (exact replay), a resume's attempt id, or the same key with a new attempt: purged.
    const replay = session({ sessionId: randomUUID() });
    expect(await store.createSession(replay, [], { ...attempt, sessionId: replay.sessionId })).toEqual({ kind: "purged" });
    expect(await store.createSession(session({ idempotencyKey: "other" }), [], { ...resume, operation: "start", generation: 1n })).toEqual({
      kind: "purged",
    });
    expect(await store.createSession(replay, [], startAttempt(replay))).toEqual({ kind: "purged" });
    // Another agent identity is another scope.
    const other = session({ agentIdentity: "cd".repeat(32) });
    const otherAttempt = startAttempt(other);
    expect(await store.createSession(other, [], otherAttempt)).toEqual({ kind: "created" });
    // attempt-exists is checked before purged (the replay's scope is tombstoned).
    expect(await store.createSession(replay, [], otherAttempt)).toEqual({ kind: "attempt-exists" });

    // A later purge drops tombstones stamped before tombstonesBefore.
    expect(await store.purgeFinished(0, 20_000, 10_001)).toBe(0);
    const fresh = session({ sessionId: randomUUID() });
    expect(await store.createSession(fresh, [], { ...attempt, sessionId: fresh.sessionId })).toEqual({ kind: "created" });
  });
});

describe("migrations and lifecycle", () => {
  it("three stores migrating one fresh schema at once all succeed; the version is recorded once", async () => {
    const schema = freshSchema();
    const stores = await Promise.all([connect({ schema }), connect({ schema }), connect({ schema })]);
    const client = await admin();
    try {
      const { rows } = await client.query<{ version: number }>(`SELECT version FROM ${schema}.schema_migrations ORDER BY version`);
      expect(rows.map((r) => r.version)).toEqual(Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1));
    } finally {
      await client.end();
    }
    const s = session();
    await stores[0]?.createSession(s, [], startAttempt(s));
    expect(await stores[2]?.getSession(s.sessionId)).toEqual(s);
  });

  it("refuses a schema written by a newer version", async () => {
    const schema = freshSchema();
    await (await connect({ schema })).close();
    const client = await admin();
    await client.query(`INSERT INTO ${schema}.schema_migrations (version) VALUES ($1)`, [SCHEMA_VERSION + 1]);
    await client.end();
    await expect(PostgresSessionStore.connect({ connectionString: pgUrl(), schema })).rejects.toThrow(/has version/);
  });

  it("needs open() first, refuses bad schema names, and fails after close", async () => {
    expect(() => new PostgresSessionStore({ connectionString: pgUrl(), schema: "Robert'); DROP TABLE" })).toThrow(TypeError);
    const unopened = new PostgresSessionStore({ connectionString: pgUrl(), schema: freshSchema() });
    await expect(unopened.getSession("x")).rejects.toThrow(/open\(\)/);
    await expect(unopened.finish("x", "{}", 1)).rejects.toThrow(/open\(\)/);
    await unopened.close();
    const store = await connect();
    await store.close();
    await expect(store.getSession("x")).rejects.toThrow(/closed/);
    await store.close(); // twice is fine
  });

  it("close() commits the writes still queued", async () => {
    const schema = freshSchema();
    const store = await connect({ schema });
    const s = session();
    const input = stream(s.sessionId, "input");
    const created = store.createSession(s, [input], startAttempt(s));
    const chunk = store.acceptInput({ streamId: input.streamId, sequence: 0n, itemCount: 1n, data: bytes("a"), mimeType: undefined }, []);
    await store.close();
    await expect(created).resolves.toEqual({ kind: "created" });
    await expect(chunk).resolves.toBeUndefined();
    const again = await connect({ schema });
    expect((await again.getStream(input.streamId))?.count).toBe(1n);
  });

  it("a server that is not there fails connect with the driver's reason", async () => {
    await expect(
      PostgresSessionStore.connect({ connectionString: "postgres://nobody:x@127.0.0.1:1/none", schema: freshSchema() }),
    ).rejects.toThrow(/ECONNREFUSED|connect/);
  });
});

describe("retention bounds", () => {
  it("an infinite retention purges nothing; fractional times are bounds in whole milliseconds", async () => {
    const store = await connect();
    const s = session();
    await store.createSession(s, [], startAttempt(s));
    await store.finish(s.sessionId, "{}", 5000);
    expect(await store.purgeFinished(Number.NEGATIVE_INFINITY, 6000, Number.NEGATIVE_INFINITY)).toBe(0);
    expect(await store.purgeFinished(5000, 6000.7, 0)).toBe(0);
    expect(await store.purgeFinished(5000.2, 6000, 0)).toBe(1);
    await expect(store.purgeFinished(Number.NaN, 1, 1)).rejects.toThrow(RangeError);
  });
});

/**
 * A writer connection lost at the worst moment, on a real PostgreSQL: a proxy passes the writer's
 * COMMIT (or its group statement of appends) to the server and cuts the connection before the
 * answer comes back, so the write committed and the store does not know it. Within the outage
 * grace the store asks after reconnecting (the group's commit marker, the streams' counts) and settles the
 * writes as committed, writing nothing twice; cut before the COMMIT went out, the group is
 * written again. A journal entry written again after all (its answer lost) is done, not refused.
 */
import { afterAll, describe, expect, it } from "vitest";
import { bytes, session, startAttempt, stream } from "@golem-stream/server/testing";
import { admin, cleanUp, connect, freshSchema, pgUrl } from "./support/stores.js";
import { cuttingProxy } from "./support/cutting-proxy.js";

afterAll(cleanUp);

/** A text only the one-statement group of appends sends (`append-group.ts`). */
const GROUP_STATEMENT = "AS r(run, log, stream_id, start, total, epoch)";

describe("a writer connection lost around its COMMIT", () => {
  it("after the COMMIT reached the server: the write is settled as committed, not written again", async () => {
    const proxy = await cuttingProxy(pgUrl());
    try {
      const store = await connect({ connectionString: proxy.url });
      const s = session();
      const cut = proxy.arm("COMMIT", true);
      // Written again, the session would be refused as an existing attempt.
      const created = store.createSession(s, [stream(s.sessionId, "input")], startAttempt(s));
      await cut;
      expect(await created).toEqual({ kind: "created" });
      expect((await store.getSession(s.sessionId))?.sessionId).toBe(s.sessionId);
      expect(await store.listStreams(s.sessionId)).toHaveLength(1);
    } finally {
      await proxy.close();
    }
  });

  it("before the COMMIT went out: the group is written again on a new connection", async () => {
    const proxy = await cuttingProxy(pgUrl());
    try {
      const store = await connect({ connectionString: proxy.url });
      const s = session();
      const cut = proxy.arm("COMMIT", false);
      const created = store.createSession(s, [stream(s.sessionId, "input")], startAttempt(s));
      await cut;
      expect(await created).toEqual({ kind: "created" });
      expect(await store.listStreams(s.sessionId)).toHaveLength(1);
    } finally {
      await proxy.close();
    }
  });

  it("a journal entry whose COMMIT answer was lost: the step's write is settled as done, its entry stored once", async () => {
    const proxy = await cuttingProxy(pgUrl());
    try {
      const store = await connect({ connectionString: proxy.url });
      const s = session();
      await store.createSession(s, [], startAttempt(s));
      const entry = { sessionId: s.sessionId, position: 0, name: "fetch-rate", outcome: '{"value":1.08}' };
      const cut = proxy.arm("COMMIT", true);
      const appended = store.appendJournal(entry, 1n);
      await cut;
      await appended;
      expect(await store.readJournal(s.sessionId)).toEqual([entry]);
      // Written once more (a retry of a write whose first answer was lost): done, not refused.
      await store.appendJournal(entry, 1n);
      await expect(store.appendJournal({ ...entry, outcome: '{"value":1.09}' }, 1n)).rejects.toThrow(
        "the journal position is already taken",
      );
      expect(await store.readJournal(s.sessionId)).toEqual([entry]);
    } finally {
      await proxy.close();
    }
  });

  it("a group statement of appends whose answer was lost: the streams' counts say it committed, each chunk is there once", async () => {
    const proxy = await cuttingProxy(pgUrl());
    try {
      const store = await connect({ connectionString: proxy.url });
      const s = session();
      const input = stream(s.sessionId, "input");
      await store.createSession(s, [input], startAttempt(s));
      const cut = proxy.arm("WITH moved AS", true);
      const chunks = ["ab", "cde", "f"];
      const accepted = Promise.all(
        chunks.map((text, i) =>
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
      );
      await cut;
      await accepted;
      expect((await store.getStream(input.streamId))?.count).toBe(6n);
      const read = await store.readInput(input.streamId, 0n, 6n);
      expect(read.map((chunk) => new TextDecoder().decode(chunk.data)).join("")).toBe("abcdef");
    } finally {
      await proxy.close();
    }
  });
  it("a group statement whose answer was lost, one run on an ended input: the run that moved is settled as stored, the other refused for its own reason", async () => {
    const proxy = await cuttingProxy(pgUrl());
    try {
      const store = await connect({ connectionString: proxy.url });
      const s = session();
      const ended = stream(s.sessionId, "input");
      const open = stream(s.sessionId, "input");
      await store.createSession(s, [ended, open], startAttempt(s));
      await store.endInput(ended.streamId, { kind: "cancelled", by: "server", reason: "consumer-drop" });
      const chunk = (streamId: string) => ({ streamId, sequence: 0n, itemCount: 1n, data: bytes("x"), mimeType: undefined });
      const cut = proxy.arm(GROUP_STATEMENT, true);
      const [onEnded, onOpen] = await Promise.allSettled([
        store.acceptInput(chunk(ended.streamId), []),
        store.acceptInput(chunk(open.streamId), []),
        cut,
      ]);
      expect(onOpen).toEqual({ status: "fulfilled", value: undefined });
      expect(onEnded.status).toBe("rejected");
      expect((await store.getStream(open.streamId))?.count).toBe(1n);
      expect(await store.readInput(open.streamId, 0n, 1n)).toHaveLength(1);
      expect((await store.getStream(ended.streamId))?.count).toBe(0n);
    } finally {
      await proxy.close();
    }
  });

  it("a group statement whose answer was lost, with an owner's output item beside a run that could not move: the item is settled as stored", async () => {
    const proxy = await cuttingProxy(pgUrl());
    try {
      const store = await connect({ connectionString: proxy.url });
      const s = session();
      const ended = stream(s.sessionId, "input");
      const output = stream(s.sessionId, "output");
      await store.createSession(s, [ended, output], startAttempt(s));
      await store.endInput(ended.streamId, { kind: "cancelled", by: "server", reason: "consumer-drop" }, 1n);
      const cut = proxy.arm(GROUP_STATEMENT, true);
      const [, item] = await Promise.allSettled([
        store.acceptInput({ streamId: ended.streamId, sequence: 0n, itemCount: 1n, data: bytes("x"), mimeType: undefined }, []),
        store.appendOutput(
          { event: "item", streamId: output.streamId, sequence: 0n, itemCount: 1n, data: bytes("y"), mimeType: undefined },
          [],
          1n,
        ),
        cut,
      ]);
      expect(item).toEqual({ status: "fulfilled", value: undefined });
      expect((await store.getStream(output.streamId))?.count).toBe(1n);
      expect(await store.readOutput(output.streamId, 0n, 5)).toHaveLength(1);
    } finally {
      await proxy.close();
    }
  });

  it("a group statement whose answer was lost before it reached the server, one run on an ended input: written again, the other run stored once", async () => {
    const proxy = await cuttingProxy(pgUrl());
    try {
      const store = await connect({ connectionString: proxy.url });
      const s = session();
      const ended = stream(s.sessionId, "input");
      const open = stream(s.sessionId, "input");
      await store.createSession(s, [ended, open], startAttempt(s));
      await store.endInput(ended.streamId, { kind: "cancelled", by: "server", reason: "consumer-drop" });
      const chunk = (streamId: string) => ({ streamId, sequence: 0n, itemCount: 1n, data: bytes("x"), mimeType: undefined });
      const cut = proxy.arm(GROUP_STATEMENT, false);
      const [onEnded, onOpen] = await Promise.allSettled([
        store.acceptInput(chunk(ended.streamId), []),
        store.acceptInput(chunk(open.streamId), []),
        cut,
      ]);
      expect(onOpen).toEqual({ status: "fulfilled", value: undefined });
      expect(onEnded.status).toBe("rejected");
      expect((await store.getStream(open.streamId))?.count).toBe(1n);
      expect(await store.readInput(open.streamId, 0n, 1n)).toHaveLength(1);
    } finally {
      await proxy.close();
    }
  });
});

describe("the writer's commit marker (writer_groups)", () => {
  const markers = async (schema: string) => {
    const client = await admin();
    try {
      return (
        await client.query<{ writer: string; group_seq: string }>(`SELECT writer, group_seq FROM ${schema}.writer_groups ORDER BY writer`)
      ).rows;
    } finally {
      await client.end();
    }
  };

  it("one row per open store, set by each group of several statements, deleted when the store closes", async () => {
    const schema = freshSchema();
    const store = await connect({ schema });
    for (let i = 0; i < 3; i++) {
      const s = session({ idempotencyKey: `marker-${i}` });
      await store.createSession(s, [stream(s.sessionId, "input")], startAttempt(s));
    }
    const rows = await markers(schema);
    expect(rows).toHaveLength(1);
    expect(Number(rows[0]!.group_seq)).toBeGreaterThanOrEqual(3);
    await store.close();
    expect(await markers(schema)).toEqual([]);
  });

  it("without an outage grace nothing would ask: no marker is written", async () => {
    const schema = freshSchema();
    const store = await connect({ schema, outageGraceMs: 0 });
    const s = session({ idempotencyKey: "no-grace" });
    await store.createSession(s, [], startAttempt(s));
    expect(await markers(schema)).toEqual([]);
  });

  it("a crashed writer's row, unused for a day and the grace, is swept when a store opens; a recent one stays", async () => {
    const schema = freshSchema();
    await (await connect({ schema })).close();
    const client = await admin();
    try {
      await client.query(
        `INSERT INTO ${schema}.writer_groups (writer, group_seq, written_at) VALUES ('gone', 7, now() - interval '2 days'), ('recent', 9, now() - interval '1 hour')`,
      );
    } finally {
      await client.end();
    }
    await connect({ schema });
    expect(await markers(schema)).toEqual([{ writer: "recent", group_seq: "9" }]);
  });
});

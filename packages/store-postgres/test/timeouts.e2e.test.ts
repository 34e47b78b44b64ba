/**
 * Connect, statement and query timeouts (`connectTimeoutMs`,
 * `statementTimeoutMs`, `queryTimeoutMs`) on the real PostgreSQL the tests
 * start: a held table lock makes statements run past a small statement
 * timeout, a proxy that stalls makes the server stop answering, and a
 * listener that never speaks makes connecting hang. Every one surfaces as
 * a `PostgresStoreError` with its code, and the store works again after.
 */
import { afterAll, describe, expect, it } from "vitest";
import { bytes, session, startAttempt, stream } from "@golem-stream/server/testing";
import { PostgresSessionStore, PostgresStoreError } from "../src/index.js";
import { connectionSettings } from "../src/connection-settings.js";
import { admin, cleanUp, connect, freshSchema, pgUrl } from "./support/stores.js";
import { startSilentListener, startTcpProxy } from "@golem-stream/test-support";

afterAll(cleanUp);

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => "resolved",
    (error: unknown) => error,
  );
}

describe("statementTimeoutMs", () => {
  it("a read or a write held on a lock past it fails with statement-timeout; the store then works on", async () => {
    // Small, but far above what the statements before the lock take on a loaded machine.
    const store = await connect({ statementTimeoutMs: 1000 });
    const s = session();
    const input = stream(s.sessionId, "input");
    await store.createSession(s, [input], startAttempt(s));
    const blocker = await admin();
    try {
      await blocker.query("BEGIN");
      await blocker.query(`LOCK TABLE ${store.schema}.streams IN ACCESS EXCLUSIVE MODE`);
      const read = await failure(store.getStream(input.streamId));
      expect(read).toBeInstanceOf(PostgresStoreError);
      expect(read).toMatchObject({ code: "statement-timeout", cause: { code: "57014" } });
      const write = await failure(
        store.acceptInput({ streamId: input.streamId, sequence: 0n, itemCount: 1n, data: bytes("a"), mimeType: undefined }, []),
      );
      expect(write).toMatchObject({ name: "PostgresStoreError", code: "statement-timeout" });
    } finally {
      await blocker.query("ROLLBACK");
      await blocker.end();
    }
    // The writer's connection survived (the statement was cancelled inside its savepoint).
    await store.acceptInput({ streamId: input.streamId, sequence: 0n, itemCount: 1n, data: bytes("a"), mimeType: undefined }, []);
    expect((await store.getStream(input.streamId))?.count).toBe(1n);
  });
});

describe("queryTimeoutMs and connectTimeoutMs", () => {
  it("a server that stops answering: reads and writes fail with query-timeout, new connections with connect-timeout; all well once it answers", async () => {
    const proxy = await startTcpProxy({ upstream: pgUrl() });
    try {
      const through = new URL(pgUrl());
      through.hostname = "127.0.0.1";
      through.port = String(proxy.port);
      // No outage grace: this is what each call meets at the first timeout (with one, a connect
      // timeout is waited out like a refused connection: write-queue-outage.test.ts).
      const store = await connect({
        connectionString: through.toString(),
        statementTimeoutMs: 0,
        queryTimeoutMs: 1500,
        connectTimeoutMs: 1500,
        outageGraceMs: 0,
      });
      const s = session();
      const input = stream(s.sessionId, "input");
      await store.createSession(s, [input], startAttempt(s));
      await store.getSession(s.sessionId); // a pooled connection, open before the stall
      proxy.pause();
      expect(await failure(store.getSession(s.sessionId))).toMatchObject({ name: "PostgresStoreError", code: "query-timeout" });
      const write = await failure(
        store.acceptInput({ streamId: input.streamId, sequence: 0n, itemCount: 1n, data: bytes("a"), mimeType: undefined }, []),
      );
      expect(write).toMatchObject({ name: "PostgresStoreError", code: "query-timeout" });
      // The stalled writer connection was closed: the next write opens another, which cannot connect.
      const reconnect = await failure(store.endInput(input.streamId, { kind: "end" }));
      expect(reconnect).toMatchObject({ name: "PostgresStoreError", code: "connect-timeout" });
      expect(await failure(store.ping())).toMatchObject({ name: "PostgresStoreError" });
      proxy.resume();
      // The first write's statement may have run after all: the stream continues from what the store has.
      const count = (await store.getStream(input.streamId))!.count;
      await store.acceptInput({ streamId: input.streamId, sequence: count, itemCount: 1n, data: bytes("b"), mimeType: undefined }, []);
      expect((await store.getStream(input.streamId))?.count).toBe(count + 1n);
      await store.ping();
    } finally {
      await proxy.close();
    }
  });

  it("connect to a server that accepts and never answers fails with connect-timeout", async () => {
    const silent = await startSilentListener();
    try {
      const url = new URL(pgUrl());
      url.hostname = "127.0.0.1";
      url.port = String(silent.port);
      const opened = await failure(
        PostgresSessionStore.connect({ connectionString: url.toString(), schema: freshSchema(), connectTimeoutMs: 300 }),
      );
      expect(opened).toBeInstanceOf(PostgresStoreError);
      expect(opened).toMatchObject({
        code: "connect-timeout",
        message: expect.stringMatching(/^cannot open the PostgresSessionStore: connect-timeout: /),
      });
    } finally {
      await silent.close();
    }
  });
});

describe("options", () => {
  it("refuses negative or fractional timeouts, from the options or from pool", () => {
    expect(() => new PostgresSessionStore({ connectionString: pgUrl(), statementTimeoutMs: -1 })).toThrow(
      /statementTimeoutMs must be a non-negative integer/,
    );
    expect(() => new PostgresSessionStore({ connectionString: pgUrl(), queryTimeoutMs: 1.5 })).toThrow(TypeError);
    expect(() => new PostgresSessionStore({ connectionString: pgUrl(), pool: { connectionTimeoutMillis: -5 } })).toThrow(
      /connectTimeoutMs must be/,
    );
  });

  it("the defaults, a pool's pg settings where no option is given, and options over both", () => {
    expect(connectionSettings({})).toEqual({
      connectionTimeoutMillis: 10_000,
      statement_timeout: 30_000,
      query_timeout: 45_000,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      idle_in_transaction_session_timeout: 10_000,
    });
    expect(
      connectionSettings(
        { statementTimeoutMs: 7 },
        { statement_timeout: 5, query_timeout: 9, connectionTimeoutMillis: 3, keepAlive: false },
      ),
    ).toEqual({
      connectionTimeoutMillis: 3,
      statement_timeout: 7,
      query_timeout: 9,
      keepAlive: false,
      keepAliveInitialDelayMillis: 10_000,
      idle_in_transaction_session_timeout: 10_000,
    });
    expect(connectionSettings({}, { statement_timeout: false }).statement_timeout).toBe(0);
  });
});

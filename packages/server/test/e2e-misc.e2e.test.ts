/** Discovery endpoint, retention and session-expired, keyring rotation, output cursor checks. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { inspectToken, Keyring } from "@golem-stream/tokens";
import WebSocket from "ws";
import { RawClient, TOKEN, demoStart, v, resumeAttach } from "./helpers.js";
import { startProbeServer } from "./probe-server.js";
import { createServer } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteSessionStore, createSessionServer } from "../src/index.js";
import { ECHO_METHODS, createDemoHost } from "../src/demo/index.js";

let clock = Date.now();
let server: Awaited<ReturnType<typeof startProbeServer>>;
beforeAll(async () => {
  server = await startProbeServer({ sessionRetentionMs: 60_000 }, () => clock);
});
afterAll(async () => {
  await server.dispose();
});

async function getJson(path: string, token: string | null = TOKEN): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${server.httpUrl}${path}`, { headers: token === null ? {} : { authorization: `Bearer ${token}` } });
  return { status: response.status, body: await response.json() };
}

describe("discovery endpoint", () => {
  it("returns the catalogue of an application environment", async () => {
    const { status, body } = await getJson("/v1/agents/types?application=demo&environment=default");
    expect(status).toBe(200);
    expect(body).toMatchObject({ application: "demo", environment: "default", agentTypes: [{ name: "echo", config: [] }] });
    const methods = (body as { agentTypes: { methods: { name: string }[] }[] }).agentTypes[0]!.methods;
    expect(methods.map((m) => m.name)).toEqual(ECHO_METHODS.map((m) => m.name));
  });

  it("answers HEAD as GET, without the body; another method is invalid-message", async () => {
    const path = `${server.httpUrl}/v1/agents/types?application=demo&environment=default`;
    const headers = { authorization: `Bearer ${TOKEN}` };
    const get = await fetch(path, { headers });
    const head = await fetch(path, { method: "HEAD", headers });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe(get.headers.get("content-length"));
    expect(await head.text()).toBe("");
    const post = await fetch(path, { method: "POST", headers });
    expect(post.status).toBe(400);
    expect(await post.json()).toMatchObject({ code: "invalid-message" });
  });

  it("answers failures with the HTTP error envelope", async () => {
    expect(await getJson("/v1/agents/types?application=demo&environment=default", null)).toMatchObject({
      status: 401,
      body: { code: "unauthenticated" },
    });
    expect(await getJson("/v1/agents/types?application=demo")).toMatchObject({
      status: 400,
      body: { code: "validation-error", errors: [expect.any(String)] },
    });
    expect(await getJson("/v1/agents/types?application=nope&environment=default")).toMatchObject({
      status: 404,
      body: { code: "not-found" },
    });
    expect(await getJson("/v1/agents/types?application=demo&environment=secret")).toMatchObject({
      status: 403,
      body: { code: "forbidden" },
    });
  });
});

describe("retention", () => {
  it("a finished session past its retention is session-expired", async () => {
    const client = await RawClient.connect(server.url);
    client.send(demoStart("count", v.record(v.u32(1), v.u32(0))));
    const accepted = await client.nextOf("invocationAccepted");
    await client.all();
    clock += 60_001;
    try {
      const late = await RawClient.connect(server.url);
      const attempt = resumeAttach("takeover", accepted.sessionToken);
      late.send(attempt);
      const { messages, closed } = await late.all();
      expect(messages).toEqual([
        {
          type: "invocationRejected",
          attemptId: attempt.attemptId,
          code: "session-expired",
          message: expect.any(String),
          retryable: false,
        },
      ]);
      expect(closed.code).toBe(1002);
    } finally {
      clock -= 60_001;
    }
  });
});

describe("tombstones of purged sessions", () => {
  it("a late exact replay of a purged session's start is session-expired and runs nothing; so is a new start with its idempotency key", async () => {
    const short = await startProbeServer({ sessionRetentionMs: 50 });
    try {
      const start = demoStart("count", v.record(v.u32(2), v.u32(0)));
      const client = await RawClient.connect(short.url);
      client.send(start);
      const accepted = await client.nextOf("invocationAccepted");
      expect((await client.all()).messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
      const sessionId = (inspectToken(accepted.sessionToken).fields as { sessionId: string }).sessionId;
      // The sweeper runs every 50 ms here: wait until it has purged the session.
      for (let i = 0; i < 200 && (await short.store.getSession(String(sessionId))) !== undefined; i++)
        await new Promise((r) => setTimeout(r, 20));
      expect(await short.store.getSession(String(sessionId))).toBeUndefined();

      for (const late of [start, { ...start, attemptId: randomUUID() }]) {
        const replay = await RawClient.connect(short.url);
        replay.send(late);
        const { messages, closed } = await replay.all();
        expect(messages).toEqual([
          { type: "invocationRejected", attemptId: late.attemptId, code: "session-expired", message: expect.any(String), retryable: false },
        ]);
        expect(closed.code).toBe(1002);
      }
      // A new key of the same agent still starts.
      const fresh = await RawClient.connect(short.url);
      fresh.send({ ...start, attemptId: randomUUID(), idempotencyKey: randomUUID() });
      await fresh.nextOf("invocationAccepted");
      await fresh.all();
    } finally {
      await short.dispose();
    }
  });
});

describe("keyring rotation", () => {
  it("old tokens keep verifying, refreshed session tokens use the new key, stream tokens never change", async () => {
    const original = Keyring.generate("k1");
    const rotating = await startProbeServer({}, undefined, original);
    try {
      const client = await RawClient.connect(rotating.url);
      client.send(demoStart("reverse", v.record(v.stream(randomUUID()))));
      const accepted = await client.nextOf("invocationAccepted");
      client.close();
      await client.closed;
      expect(inspectToken(accepted.sessionToken).keyId).toBe("k1");

      rotating.server.rotateKeyring(original.rotate("k2"));
      const resumed = await RawClient.connect(rotating.url);
      resumed.send(resumeAttach("resume", accepted.sessionToken));
      const reaccepted = await resumed.nextOf("invocationAccepted");
      expect(inspectToken(reaccepted.sessionToken).keyId).toBe("k2");
      expect(reaccepted.mappings[0]!.streamToken).toBe(accepted.mappings[0]!.streamToken);
      expect(inspectToken(reaccepted.mappings[0]!.streamToken).keyId).toBe("k1");
      resumed.close();
      await resumed.closed;

      // A keyring without k1 no longer verifies tokens it signed.
      rotating.server.rotateKeyring(Keyring.generate("k9"));
      const stranger = await RawClient.connect(rotating.url);
      stranger.send(resumeAttach("resume", accepted.sessionToken));
      expect((await stranger.all()).messages[0]).toMatchObject({ code: "invalid-token" });
    } finally {
      await rotating.dispose();
    }
  });
});

describe("output cursors", () => {
  it("two cursors for one stream are invalid-message; a cursor of another session is invalid-token", async () => {
    const a = await RawClient.connect(server.url);
    a.send(demoStart("count", v.record(v.u32(2), v.u32(0))));
    const acceptedA = await a.nextOf("invocationAccepted");
    const { messages } = await a.all();
    const cursors = messages.flatMap((m) => (m.type === "outputStreamItem" ? [m.cursorToken] : []));
    expect(cursors).toHaveLength(2);

    const twice = await RawClient.connect(server.url);
    twice.send(resumeAttach("takeover", acceptedA.sessionToken, cursors));
    expect((await twice.all()).messages[0]).toMatchObject({ code: "invalid-message" });

    const b = await RawClient.connect(server.url);
    b.send(demoStart("count", v.record(v.u32(1), v.u32(0))));
    const acceptedB = await b.nextOf("invocationAccepted");
    await b.all();
    const foreign = await RawClient.connect(server.url);
    foreign.send(resumeAttach("takeover", acceptedB.sessionToken, [cursors[0]!]));
    expect((await foreign.all()).messages[0]).toMatchObject({ code: "invalid-token" });
  });
});

describe("mounting and capacity", () => {
  it("attach(server) serves the endpoints on a user's http.Server and leaves its other paths alone", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-attach-"));
    const store = new SqliteSessionStore({ dataDir, synchronous: "normal" });
    const userServer = createServer((req, res) => {
      if (req.url === "/hello") res.end("hi from the user");
    });
    const sessions = createSessionServer({
      store,
      host: createDemoHost(),
      keyring: Keyring.generate(),
      authenticator: (t) => (t === TOKEN ? { account: "a", principal: "p" } : undefined),
    });
    sessions.attach(userServer);
    await new Promise<void>((resolve) => userServer.listen(0, "127.0.0.1", resolve));
    const port = (userServer.address() as { port: number }).port;
    try {
      expect(await (await fetch(`http://127.0.0.1:${port}/hello`)).text()).toBe("hi from the user");
      const client = await RawClient.connect(`ws://127.0.0.1:${port}`);
      client.send(demoStart("count", v.record(v.u32(2), v.u32(0))));
      const { messages } = await client.all();
      expect(messages.at(-1)?.type).toBe("invocationFinished");
    } finally {
      await sessions.close();
      userServer.closeAllConnections();
      await new Promise((resolve) => userServer.close(resolve));
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("overloaded: upgrades beyond maxConnections get 503 with the error envelope", async () => {
    const small = await startProbeServer({ maxConnections: 1 });
    try {
      const first = await RawClient.connect(small.url);
      const refused = await new Promise<{ status: number; body: string }>((resolve) => {
        const socket = new WebSocket(`${small.url}/v1/agents/invoke-agent-session`, ["golem.agent-invocation.v1"], {
          headers: { authorization: `Bearer ${TOKEN}` },
        });
        socket.on("unexpected-response", (_req, res) => {
          let body = "";
          res.on("data", (chunk: Buffer) => (body += chunk.toString()));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        });
        socket.on("error", () => undefined);
      });
      expect(refused.status).toBe(503);
      expect(JSON.parse(refused.body)).toEqual({ code: "overloaded", error: expect.any(String) });
      first.close();
    } finally {
      await small.dispose();
    }
  });
});

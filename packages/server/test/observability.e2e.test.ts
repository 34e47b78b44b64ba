/**
 * Operations: `/metrics` scraped during a real run over
 * loopback WebSockets, counters moving as protocol events happen; every
 * log line of that run (start, resume, takeover, revocation, rejections, a
 * violation, finishes) free of token and key material; `/healthz` and
 * `/readyz`, which flips during a drain; one span per attachment.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { Keyring } from "@golem-stream/tokens";
import type { ServerMessage } from "@golem-stream/wire";
import { createSessionServer, loggerFromPino, MemorySessionStore, type SessionServer } from "../src/index.js";
import { createDemoHost } from "../src/demo/index.js";
import { RawClient, TOKEN, demoStart, startTestServer, v, type TestServer, resumeAttach } from "./helpers.js";
import { get, sample, scrapeUntil } from "./support/operations.js";

const P = "golem_stream_";

/** Every token the server handed to a client, found anywhere in its messages. */
function tokensIn(messages: readonly ServerMessage[]): Set<string> {
  const found = new Set<string>();
  const walk = (value: unknown): void => {
    if (ArrayBuffer.isView(value)) return; // payloads
    if (Array.isArray(value)) value.forEach(walk);
    else if (typeof value === "object" && value !== null) {
      for (const [key, inner] of Object.entries(value)) {
        if ((key === "sessionToken" || key === "streamToken" || key === "cursorToken") && typeof inner === "string") found.add(inner);
        else walk(inner);
      }
    }
  };
  messages.forEach(walk);
  return found;
}

/** A keyring secret in every encoding a log line could plausibly carry it in. */
function keyEncodings(keyringJson: string): string[] {
  const parsed = JSON.parse(keyringJson) as { keys: { secret: string }[] };
  return parsed.keys.flatMap(({ secret }) => {
    const bytes = Buffer.from(secret, "base64url");
    expect(bytes.length).toBeGreaterThanOrEqual(32);
    return [secret, bytes.toString("base64"), bytes.toString("hex"), bytes.toString("hex").toUpperCase()];
  });
}

describe("a full scenario run: metrics move, logs carry events and no secrets", () => {
  let server: TestServer;
  const lines: string[] = [];
  const clients: RawClient[] = [];
  const connect = async (): Promise<RawClient> => {
    const client = await RawClient.connect(server.url);
    clients.push(client);
    return client;
  };
  const metrics = () => scrapeUntil(server.httpUrl, () => true, "anything");

  beforeAll(async () => {
    const logger = pino({ level: "debug" }, { write: (line: string) => void lines.push(line) });
    server = await startTestServer({
      metrics: true,
      healthEndpoints: true,
      logger: loggerFromPino(logger),
      // A small send buffer so that a client that stops reading pauses the sender quickly.
      limits: { sendHighWaterBytes: 16 * 1024 },
    });
  });
  afterAll(async () => {
    await server.dispose();
  });

  it("before any session: zeros, the Prometheus content type, no session label", async () => {
    const answer = await get(server.httpUrl, "/metrics");
    expect(answer.status).toBe(200);
    expect(answer.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(sample(answer.body, `${P}sessions_started_total`)).toBe(0);
    expect(sample(answer.body, `${P}connections_open`)).toBe(0);
    expect(sample(answer.body, `${P}node_buffered_bytes`)).toBe(0);
    expect(sample(answer.body, `${P}node_buffered_bytes_limit`)).toBe(256 * 1024 * 1024);
    expect(answer.body).not.toMatch(/session_id|token/);
  });

  it("an upgrade with a bad bearer token counts as an unauthenticated rejection", async () => {
    await expect(RawClient.connect(server.url, "not-a-token")).rejects.toThrow(/401/);
    const text = await scrapeUntil(
      server.httpUrl,
      (t) => sample(t, `${P}attachment_rejections_total`, { code: "unauthenticated", operation: "upgrade" }) === 1,
      "the rejection",
    );
    expect(sample(text, `${P}attachments_total`, { operation: "start" })).toBe(0);
  });

  it("a catalogue request with a bad bearer token counts (and is logged) as an unauthenticated discover rejection", async () => {
    const answer = await fetch(`${server.httpUrl}/v1/agents/types?application=demo&environment=default`, {
      headers: { authorization: "Bearer not-a-token" },
    });
    expect(answer.status).toBe(401);
    await scrapeUntil(
      server.httpUrl,
      (t) => sample(t, `${P}attachment_rejections_total`, { code: "unauthenticated", operation: "discover" }) === 1,
      "the rejection",
    );
    const logged = lines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((r) => r["event"] === "attach.rejected" && r["operation"] === "discover");
    expect(logged).toEqual([expect.objectContaining({ code: "unauthenticated", msg: "attach rejected" })]);
  });

  it("digest: start, u8 input items and bytes, a running session, a store commit, the finish by outcome", async () => {
    const client = await connect();
    client.send(demoStart("digest", v.record(v.stream(randomUUID()))));
    const channel = (await client.nextOf("invocationAccepted")).mappings[0]!.channel;
    let text = await metrics();
    expect(sample(text, `${P}sessions_started_total`)).toBe(1);
    expect(sample(text, `${P}attachments_total`, { operation: "start" })).toBe(1);
    expect(sample(text, `${P}sessions_running`)).toBe(1);
    expect(sample(text, `${P}connections_open`)).toBe(1);

    client.send({ type: "input-u8", channel, sequence: 0n, payload: new Uint8Array([1, 2, 3, 4, 5]) });
    await client.nextOf("inputStreamAck");
    text = await metrics();
    expect(sample(text, `${P}input_items_total`, { kind: "u8" })).toBe(5);
    expect(sample(text, `${P}input_bytes_total`, { kind: "u8" })).toBe(5);
    expect(sample(text, `${P}store_commit_seconds_count`)).toBeGreaterThan(0);
    expect(sample(text, `${P}store_commit_group_size_sum`)).toBeGreaterThanOrEqual(sample(text, `${P}store_commit_group_size_count`));

    client.send({ type: "inputStreamEnd", channel, sequence: 5n });
    const { closed } = await client.all();
    expect(closed.code).toBe(1000);
    text = await scrapeUntil(
      server.httpUrl,
      (t) => sample(t, `${P}sessions_running`) === 0 && sample(t, `${P}connections_open`) === 0,
      "the session and connection gone",
    );
    expect(sample(text, `${P}sessions_finished_total`, { outcome: "success" })).toBe(1);
    expect(sample(text, `${P}session_duration_seconds_count`, { outcome: "success" })).toBe(1);
    // Everything the session held in the node's budget was given back.
    expect(sample(text, `${P}node_buffered_bytes`)).toBe(0);
  });

  it("count: output items, then resume, takeover and the revocation it causes", async () => {
    const first = await connect();
    first.send(demoStart("count", v.record(v.u32(20), v.u32(5))));
    const accepted = await first.nextOf("invocationAccepted");
    await first.nextOf("outputStreamItem");
    first.terminate();
    await first.closed;

    const second = await connect();
    second.send(resumeAttach("resume", accepted.sessionToken));
    const resumed = await second.nextOf("invocationAccepted");
    let text = await metrics();
    expect(sample(text, `${P}attachments_total`, { operation: "resume" })).toBe(1);
    expect(sample(text, `${P}output_items_total`, { kind: "value" })).toBeGreaterThan(0);

    const third = await connect();
    third.send(resumeAttach("takeover", resumed.sessionToken));
    await third.nextOf("invocationAccepted");
    await second.nextOf("attachmentRevoked");
    text = await metrics();
    expect(sample(text, `${P}attachments_total`, { operation: "takeover" })).toBe(1);
    expect(sample(text, `${P}revocations_total`)).toBe(1);
    const { messages } = await third.all();
    expect(messages.at(-1)?.type).toBe("invocationFinished");
    text = await scrapeUntil(
      server.httpUrl,
      (t) => sample(t, `${P}sessions_finished_total`, { outcome: "success" }) === 2,
      "the second finish",
    );
    expect(sample(text, `${P}output_items_total`, { kind: "value" })).toBe(20);
    // Every item reached a client at least once; those the resumes sent again count again.
    expect(sample(text, `${P}output_sent_items_total`, { kind: "value" })).toBeGreaterThanOrEqual(20);
  });

  it("a resume with a forged session token is rejected and counted by its public code", async () => {
    const client = await connect();
    const forged = `${"A".repeat(40)}.${"B".repeat(43)}`;
    client.send(resumeAttach("resume", forged));
    const rejected = await client.nextOf("invocationRejected");
    const text = await metrics();
    expect(sample(text, `${P}attachment_rejections_total`, { code: rejected.code, operation: "resume" })).toBe(1);
  });

  it("a message on a channel that was never announced is a violation, counted with its close status", async () => {
    const client = await connect();
    client.send(demoStart("reverse", v.record(v.stream(randomUUID()))));
    await client.nextOf("invocationAccepted");
    client.send({ type: "inputStreamItem", channel: 999, sequence: 0n, value: v.str("x") });
    const rejected = await client.nextOf("invocationRejected");
    const { closed } = await client.all();
    const text = await metrics();
    expect(sample(text, `${P}violations_total`, { code: rejected.code, close_status: String(closed.code) })).toBe(1);
  });

  it("a client that stops reading pauses the sender (socket-buffer backpressure)", async () => {
    const client = await connect();
    client.socket.pause();
    client.send(demoStart("blobs", v.record(v.u32(64), v.u32(256 * 1024))));
    await scrapeUntil(
      server.httpUrl,
      (t) => sample(t, `${P}backpressure_pauses_total`, { reason: "socket-buffer" }) > 0,
      "a socket-buffer pause",
    );
    client.socket.resume();
    const { messages } = await client.all();
    expect(messages.at(-1)?.type).toBe("invocationFinished");
    const text = await metrics();
    expect(sample(text, `${P}output_items_total`, { kind: "binary" })).toBe(64);
    expect(sample(text, `${P}output_bytes_total`, { kind: "binary" })).toBe(64 * 256 * 1024);
    expect(sample(text, `${P}output_sent_items_total`, { kind: "binary" })).toBe(64);
    expect(sample(text, `${P}output_sent_bytes_total`, { kind: "binary" })).toBe(64 * 256 * 1024);
  });

  it("every log line is JSON with an event; the run's events are there; no token or key appears in any line", async () => {
    await scrapeUntil(server.httpUrl, (t) => sample(t, `${P}connections_open`) === 0, "every connection closed");
    const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records.filter((r) => typeof r["event"] !== "string")).toEqual([]);
    const events = records.map((r) => r["event"]);
    expect(events).toEqual(
      expect.arrayContaining(["session.start", "attach", "attach.revoked", "attach.rejected", "violation", "session.finish", "attach.end"]),
    );
    const operations = records.filter((r) => r["event"] === "attach").map((r) => r["operation"]);
    expect(operations).toEqual(expect.arrayContaining(["start", "resume", "takeover"]));
    expect(records.find((r) => r["event"] === "attach.rejected" && r["operation"] === "upgrade")).toMatchObject({
      code: "unauthenticated",
    });
    expect(records.find((r) => r["event"] === "violation")).toMatchObject({ code: "invalid-channel", closeStatus: 1002 });
    const finish = records.find((r) => r["event"] === "session.finish");
    expect(finish).toMatchObject({ outcome: "success", application: "demo", agentType: "echo" });
    expect(typeof finish?.["durationMs"]).toBe("number");
    for (const record of records) {
      if (record["session"] !== undefined)
        expect(record["session"]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    }

    const tokens = tokensIn(clients.flatMap((c) => c.received));
    // Sessions, streams, cursors: the run handed out many of each.
    expect(tokens.size).toBeGreaterThan(20);
    const secrets = [TOKEN, ...tokens, ...keyEncodings(readFileSync(join(server.dataDir, "keyring.json"), "utf8"))];
    const all = lines.join("");
    expect(all.length).toBeGreaterThan(0);
    for (const secret of secrets) expect(all.includes(secret), `a log line holds ${secret.slice(0, 12)}...`).toBe(false);
    // Token bodies too: a log line quoting half a token is still a leak.
    for (const token of tokens) for (const part of token.split(".")) if (part.length >= 16) expect(all.includes(part)).toBe(false);
  });
});

describe("health endpoints", () => {
  it("are off by default, like /metrics", async () => {
    const server = await startTestServer();
    try {
      for (const path of ["/metrics", "/healthz", "/readyz"]) expect((await get(server.httpUrl, path)).status).toBe(404);
    } finally {
      await server.dispose();
    }
  });

  it("/readyz flips to 503 when a drain begins, while /healthz stays 200", async () => {
    const server = await startTestServer({ healthEndpoints: true });
    try {
      expect(await get(server.httpUrl, "/healthz")).toMatchObject({ status: 200 });
      const before = await get(server.httpUrl, "/readyz");
      expect(before.status).toBe(200);
      expect(JSON.parse(before.body)).toEqual({ status: "ready", checks: { store: true, started: true, accepting: true } });
      // An invocation that keeps the drain waiting, so the endpoints can be asked during it.
      const client = await RawClient.connect(server.url);
      client.send(demoStart("count", v.record(v.u32(40), v.u32(25))));
      await client.nextOf("invocationAccepted");
      const drained = server.drain(30_000);
      const during = await get(server.httpUrl, "/readyz");
      expect(during.status).toBe(503);
      expect(JSON.parse(during.body)).toMatchObject({ status: "not-ready", checks: { accepting: false, store: true } });
      expect((await get(server.httpUrl, "/healthz")).status).toBe(200);
      expect(await drained).toEqual({ failed: 0, handedOver: 0 });
    } finally {
      await server.dispose();
    }
  });

  it("/readyz is 503 when the store does not answer, asking it at most once a second; only GET and HEAD are served", async () => {
    const store = new MemorySessionStore();
    let reachable = true;
    let pings = 0;
    Object.assign(store, { ping: () => (++pings, reachable ? Promise.resolve() : Promise.reject(new Error("down"))) });
    let now = 1_000_000;
    const server = createSessionServer({
      store,
      host: createDemoHost(),
      keyring: Keyring.generate(),
      authenticator: () => undefined,
      healthEndpoints: true,
      now: () => now,
    });
    const address = await server.listen();
    try {
      expect((await get(address.httpUrl, "/readyz")).status).toBe(200);
      reachable = false;
      // Within the second, the last check answers (one store round trip for every probe).
      now += 999;
      expect((await get(address.httpUrl, "/readyz")).status).toBe(200);
      expect(pings).toBe(1);
      now += 1;
      const down = await get(address.httpUrl, "/readyz");
      expect(pings).toBe(2);
      expect(down.status).toBe(503);
      expect(JSON.parse(down.body)).toMatchObject({ checks: { store: false, accepting: true } });
      const post = await fetch(`${address.httpUrl}/healthz`, { method: "POST" });
      expect(post.status).toBe(405);
    } finally {
      await server.close();
    }
  });

  it("/readyz answers not ready when the store hangs past readinessTimeoutMs", async () => {
    const store = new MemorySessionStore();
    Object.assign(store, { ping: () => new Promise(() => undefined) });
    const server = createSessionServer({
      store,
      host: createDemoHost(),
      keyring: Keyring.generate(),
      authenticator: () => undefined,
      healthEndpoints: true,
      readinessTimeoutMs: 50,
    });
    const address = await server.listen();
    try {
      expect(await server.readiness()).toEqual({ ready: false, checks: { store: false, started: true, accepting: true } });
      expect((await get(address.httpUrl, "/readyz")).status).toBe(503);
    } finally {
      await server.close();
    }
  });
});

describe("OpenTelemetry spans", () => {
  let exporter: InMemorySpanExporter;
  let server: SessionServer;
  let url: string;
  beforeAll(async () => {
    exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    dataDir = mkdtempSync(join(tmpdir(), "golem-stream-spans-"));
    const started = await startTestServer({ dataDir, tracerProvider: provider });
    server = started.server;
    url = started.url;
    dispose = () => started.dispose();
  });
  let dataDir = "";
  let dispose: () => Promise<void> = async () => undefined;
  afterAll(async () => {
    await dispose();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("one span per attachment, with public identifiers and resume, takeover and revocation events", async () => {
    expect(server.metrics).toBeUndefined();
    const first = await RawClient.connect(url);
    first.send(demoStart("count", v.record(v.u32(10), v.u32(10))));
    const accepted = await first.nextOf("invocationAccepted");
    first.terminate();
    await first.closed;
    const second = await RawClient.connect(url);
    second.send(resumeAttach("resume", accepted.sessionToken));
    const resumed = await second.nextOf("invocationAccepted");
    const third = await RawClient.connect(url);
    third.send(resumeAttach("takeover", resumed.sessionToken));
    await second.nextOf("attachmentRevoked");
    await third.all();
    await second.closed;

    const spans = exporter.getFinishedSpans();
    const byOperation = new Map(spans.map((span) => [span.attributes["golem_stream.operation"], span]));
    expect([...byOperation.keys()].sort()).toEqual(["resume", "start", "takeover"]);
    const ids = new Set(spans.map((span) => span.attributes["golem_stream.session.id"]));
    expect(ids.size).toBe(1);
    expect(byOperation.get("start")?.attributes).toMatchObject({
      "golem_stream.application": "demo",
      "golem_stream.environment": "default",
      "golem_stream.agent_type": "echo",
      "golem_stream.method": "count",
      "golem_stream.generation": "1",
      "golem_stream.attachment.end": "closed",
    });
    expect(byOperation.get("resume")?.events.map((e) => e.name)).toEqual(["resume", "revocation"]);
    expect(byOperation.get("takeover")?.events.map((e) => e.name)).toEqual(["takeover"]);
    expect(byOperation.get("takeover")?.attributes["golem_stream.attachment.end"]).toBe("finished");
    const text = JSON.stringify(spans.map((span) => ({ attributes: span.attributes, events: span.events })));
    for (const token of tokensIn([accepted, resumed])) expect(text).not.toContain(token);
  });
});

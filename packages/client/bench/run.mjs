#!/usr/bin/env node
/**
 * Throughput of @golem-stream/client, printed beside raw `ws` moving the same
 * payloads over loopback in the same run, as ratios (no absolute targets in
 * tests; this is where speed is measured).
 *
 *   node bench/run.mjs            # after `npx tsc -p tsconfig.json`
 *   BENCH_MIB=64 BENCH_ITEMS=20000 node bench/run.mjs
 *
 * Rows:
 *   raw ws            — client sends N messages, the peer replies once at the end.
 *   client, ack peer  — the full client runtime (codec, feeder, unacked buffer,
 *                       ACK handling) against a minimal in-process protocol peer
 *                       that acknowledges every item at once: the client's own cost.
 *   client + server   — the embedded server with its SQLite store (`digest` for
 *                       u8, `reverse` for strings): the product end to end.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WebSocket, WebSocketServer } from "ws";
import { SUBPROTOCOL, decodeClientMessage, encodeMessage } from "@golem-stream/wire";
import { startEmbeddedServer } from "@golem-stream/server";
import { createClient, inputStream } from "@golem-stream/client";

const MIB = 1024 * 1024;
const TOTAL_MIB = Number(process.env.BENCH_MIB ?? 64);
const ITEMS = Number(process.env.BENCH_ITEMS ?? 20000);
const ITEM = "x".repeat(64);
const ctor = { kind: "record", value: { fields: [{ kind: "string", value: "bench" }] } };
const demo = { application: "demo", environment: "default", agentType: "echo", constructorParameters: ctor };

async function time(fn) {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

// ---- raw ws: the ceiling ----

async function rawWs(messages, isBinary) {
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1", perMessageDeflate: false, maxPayload: 32 * MIB });
  await new Promise((resolve) => wss.once("listening", resolve));
  wss.on("connection", (socket) => {
    let seen = 0;
    socket.on("message", () => {
      if (++seen === messages.length) socket.send("done");
    });
  });
  const socket = new WebSocket(`ws://127.0.0.1:${wss.address().port}`, { perMessageDeflate: false });
  await new Promise((resolve) => socket.once("open", resolve));
  const seconds = await time(async () => {
    const done = new Promise((resolve) => socket.once("message", resolve));
    for (const message of messages) {
      socket.send(message, { binary: isBinary });
      // Respect the socket's buffer like any well-behaved producer.
      if (socket.bufferedAmount > 8 * MIB) await new Promise((resolve) => setImmediate(resolve));
    }
    await done;
  });
  socket.close();
  await new Promise((resolve) => wss.close(resolve));
  return seconds;
}

// ---- a minimal protocol peer that acknowledges input immediately ----

function startAckPeer() {
  const wss = new WebSocketServer({
    port: 0,
    host: "127.0.0.1",
    perMessageDeflate: false,
    maxPayload: 17 * MIB,
    handleProtocols: (protocols) => (protocols.has(SUBPROTOCOL) ? SUBPROTOCOL : false),
  });
  wss.on("connection", (socket) => {
    const send = (message) => socket.send(encodeMessage(message));
    socket.on("message", (data, isBinary) => {
      const message = decodeClientMessage(isBinary ? data : data.toString("utf8"), isBinary);
      switch (message.type) {
        case "invocationStart": {
          const ref = /"provisionalRef":"([0-9a-f-]{36})"/.exec(JSON.stringify(message.methodParameters))[1];
          send({
            type: "invocationAccepted",
            attemptId: message.attemptId,
            idempotencyKey: message.idempotencyKey,
            sessionToken: "session",
            mappings: [{ channel: 1, direction: "input", streamToken: "input", provisionalRef: ref, inputHighWater: { sequence: 0n, terminal: false } }],
          });
          return;
        }
        case "input-u8":
        case "inputStreamItem": {
          const count = message.type === "input-u8" ? BigInt(message.payload.byteLength) : 1n;
          send({ type: "inputStreamAck", channel: 1, highestContiguousSequence: message.sequence + count, mappings: [], terminal: false });
          return;
        }
        case "inputStreamEnd":
          send({ type: "inputStreamAck", channel: 1, highestContiguousSequence: message.sequence, mappings: [], terminal: true });
          send({ type: "invocationResult", mappings: [], result: { kind: "none" } });
          send({ type: "invocationFinished", outcome: { kind: "success" } });
          socket.close(1000);
          return;
      }
    });
  });
  return new Promise((resolve) => wss.once("listening", () => resolve({ url: `ws://127.0.0.1:${wss.address().port}`, close: () => new Promise((r) => wss.close(r)) })));
}

async function viaClient(url, method, params, consume) {
  const client = createClient({ url, token: "t" });
  return time(async () => {
    const call = client.invoke({ ...demo, method, methodParameters: { kind: "record", value: { fields: params } } });
    const result = await call.result;
    if (consume && result.kind === "value") for await (const _ of result.streams[0]) void _;
    await call.finished;
  });
}

// ---- the run ----

const batch = new Uint8Array(MIB).fill(7);
const batches = Array.from({ length: TOTAL_MIB }, () => batch);
const items = Array.from({ length: ITEMS }, () => ITEM);

const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-bench-"));
const server = await startEmbeddedServer({ port: 0, host: "127.0.0.1", dataDir, tokens: ["t"] });
const peer = await startAckPeer();

// Warm up JIT and SQLite once, then measure.
await rawWs(batches.slice(0, 4), true);
await viaClient(peer.url, "digest", [inputStream.bytes(batches.slice(0, 4))]);
await viaClient(server.url, "digest", [inputStream.bytes(batches.slice(0, 4))]);

const u8 = {
  raw: await rawWs(batches, true),
  peer: await viaClient(peer.url, "digest", [inputStream.bytes(batches)]),
  server: await viaClient(server.url, "digest", [inputStream.bytes(batches)]),
};
const strings = {
  raw: await rawWs(items, false),
  peer: await viaClient(peer.url, "reverse", [inputStream.strings(items)]),
  server: await viaClient(server.url, "reverse", [inputStream.strings(items)], true),
};

await peer.close();
await server.close();
rmSync(dataDir, { recursive: true, force: true });

const row = (label, seconds, units, unit, base) =>
  `${label.padEnd(36)} ${(units / seconds).toFixed(units / seconds >= 100 ? 0 : 1).padStart(10)} ${unit.padEnd(8)} ${(base / seconds).toFixed(2).padStart(6)}x raw`;
console.log(`node ${process.version}, loopback; embedded server with SQLite synchronous=FULL (its default)`);
console.log(`stream<u8>, ${TOTAL_MIB} packed batches of 1 MiB, one way`);
console.log(row("  raw ws", u8.raw, TOTAL_MIB, "MiB/s", u8.raw));
console.log(row("  client, ack-only peer", u8.peer, TOTAL_MIB, "MiB/s", u8.raw));
console.log(row("  client + server + SQLite (digest)", u8.server, TOTAL_MIB, "MiB/s", u8.raw));
console.log(`stream<string>, ${ITEMS} items of 64 bytes`);
console.log(row("  raw ws", strings.raw, ITEMS, "items/s", strings.raw));
console.log(row("  client, ack-only peer (one way)", strings.peer, ITEMS, "items/s", strings.raw));
console.log(row("  client + server + SQLite (reverse)", strings.server, ITEMS, "items/s", strings.raw));

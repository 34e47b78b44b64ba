// Benchmark of @golem-stream/server over loopback, against dist/.
// Run: npx tsc -p tsconfig.json && node bench/run.mjs
// Every ratio compares runs made side by side in this process, so the
// numbers are comparable across machines; absolute rates are printed too.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import WebSocket, { WebSocketServer } from "ws";
import { decodeServerMessage, encodeMessage, SESSION_PATH, SUBPROTOCOL } from "@golem-stream/wire";
import { createRequire } from "node:module";
import { startEmbeddedServer } from "../dist/index.js";

/**
 * Whether `ws` (as this package resolves it) loads the optional native `bufferutil`,
 * which masks and unmasks frames in C instead of JavaScript.
 */
function bufferutilStatus() {
  if (process.env.WS_NO_BUFFER_UTIL) return "disabled (WS_NO_BUFFER_UTIL)";
  try {
    createRequire(createRequire(import.meta.url).resolve("ws"))("bufferutil");
    return "loaded (native frame masking)";
  } catch (error) {
    return `not loaded (${error.code ?? error.message}): ws masks frames in JavaScript`;
  }
}

const TOKEN = "bench";
const U8_TOTAL = 32 * 1024 * 1024;
const U8_BATCH = 64 * 1024;
const COUNT_ITEMS = 5000;
const STRING_ITEMS = 20000;
const STRING = "x".repeat(64);

function connect(url) {
  const socket = new WebSocket(`${url}${SESSION_PATH}`, [SUBPROTOCOL], { headers: { authorization: `Bearer ${TOKEN}` } });
  return new Promise((resolve, reject) => {
    socket.once("open", () => resolve(socket));
    socket.once("error", reject);
  });
}

function start(method, fields) {
  return {
    type: "invocationStart",
    attemptId: randomUUID(),
    config: [],
    idempotencyKey: randomUUID(),
    methodParameters: { kind: "record", value: { fields } },
    selector: {
      agentType: "echo",
      application: "demo",
      environment: "default",
      method,
      constructorParameters: { kind: "record", value: { fields: [{ kind: "string", value: "bench" }] } },
    },
  };
}

/** Runs one invocation; `onAccepted(socket, accepted)` sends input. Resolves with elapsed ms and message count. */
function invoke(url, message, onAccepted = () => {}) {
  return connect(url).then(
    (socket) =>
      new Promise((resolve, reject) => {
        const begin = performance.now();
        let messages = 0;
        socket.on("message", (data, isBinary) => {
          const decoded = decodeServerMessage(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), isBinary);
          messages++;
          if (decoded.type === "invocationAccepted") onAccepted(socket, decoded);
          if (decoded.type === "invocationRejected") reject(new Error(decoded.message));
          if (decoded.type === "invocationFinished") resolve({ ms: performance.now() - begin, messages });
        });
        socket.send(encodeMessage(message));
      }),
  );
}

function sendU8(socket, channel) {
  const payload = new Uint8Array(U8_BATCH).fill(7);
  for (let sequence = 0; sequence < U8_TOTAL; sequence += U8_BATCH) {
    socket.send(encodeMessage({ type: "input-u8", channel, sequence: BigInt(sequence), payload }), { binary: true });
  }
  socket.send(encodeMessage({ type: "inputStreamEnd", channel, sequence: BigInt(U8_TOTAL) }));
}

function sendStrings(socket, channel) {
  for (let i = 0; i < STRING_ITEMS; i++) {
    socket.send(encodeMessage({ type: "inputStreamItem", channel, sequence: BigInt(i), value: { kind: "string", value: STRING } }));
  }
  socket.send(encodeMessage({ type: "inputStreamEnd", channel, sequence: BigInt(STRING_ITEMS) }));
}

/** Baseline for strings: the same number of 64-byte text messages to a bare ws server. */
async function rawStringsBaseline() {
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1", perMessageDeflate: false });
  await new Promise((resolve) => wss.once("listening", resolve));
  wss.on("connection", (ws) => {
    let received = 0;
    ws.on("message", () => {
      if (++received === STRING_ITEMS) ws.send("done");
    });
  });
  const socket = new WebSocket(`ws://127.0.0.1:${wss.address().port}`);
  await new Promise((resolve) => socket.once("open", resolve));
  const begin = performance.now();
  for (let i = 0; i < STRING_ITEMS; i++) socket.send(STRING);
  await new Promise((resolve) => socket.once("message", resolve));
  const ms = performance.now() - begin;
  socket.close();
  await new Promise((resolve) => wss.close(resolve));
  return ms;
}

/** Baseline: a bare ws server that counts the same bytes, with no protocol, no store. */
async function rawBaseline() {
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1", perMessageDeflate: false });
  await new Promise((resolve) => wss.once("listening", resolve));
  wss.on("connection", (ws) => {
    let received = 0;
    ws.on("message", (data) => {
      received += data.length;
      if (received >= U8_TOTAL) ws.send("done");
    });
  });
  const socket = new WebSocket(`ws://127.0.0.1:${wss.address().port}`);
  await new Promise((resolve) => socket.once("open", resolve));
  const begin = performance.now();
  const payload = new Uint8Array(U8_BATCH).fill(7);
  for (let sent = 0; sent < U8_TOTAL; sent += U8_BATCH) socket.send(payload);
  await new Promise((resolve) => socket.once("message", resolve));
  const ms = performance.now() - begin;
  socket.close();
  await new Promise((resolve) => wss.close(resolve));
  return ms;
}

async function withServer(synchronous, work) {
  const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-bench-"));
  const server = await startEmbeddedServer({ dataDir, tokens: [TOKEN], synchronous });
  try {
    return await work(server.url);
  } finally {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const digest = (url) =>
  invoke(url, start("digest", [{ kind: "stream", value: { provisionalRef: randomUUID() } }]), (socket, accepted) =>
    sendU8(socket, accepted.mappings[0].channel),
  );
const reverse = (url) =>
  invoke(url, start("reverse", [{ kind: "stream", value: { provisionalRef: randomUUID() } }]), (socket, accepted) =>
    sendStrings(socket, accepted.mappings[0].channel),
  );
const count = (url) =>
  invoke(
    url,
    start("count", [
      { kind: "u32", value: COUNT_ITEMS },
      { kind: "u32", value: 0 },
    ]),
  );

const best = async (runs, work) => {
  let min = Infinity;
  for (let i = 0; i < runs; i++) min = Math.min(min, (await work()).ms ?? Infinity);
  return min;
};

const mib = U8_TOTAL / (1024 * 1024);
const raw = Math.min(await rawBaseline(), await rawBaseline(), await rawBaseline());
const digestNormal = await withServer("normal", (url) => best(3, () => digest(url)));
// The same store then serves small items: they must not slow down beside the large rows.
const [digestFull, reverseAfterBlobs] = await withServer("full", async (url) => [
  await best(3, () => digest(url)),
  await best(3, () => reverse(url)),
]);
const rawStrings = Math.min(await rawStringsBaseline(), await rawStringsBaseline(), await rawStringsBaseline());
const reverseNormal = await withServer("normal", (url) => best(3, () => reverse(url)));
const reverseFull = await withServer("full", (url) => best(3, () => reverse(url)));
const countNormal = await withServer("normal", (url) => best(3, () => count(url)));
const countFull = await withServer("full", (url) => best(3, () => count(url)));

const rate = (ms) => `${(mib / (ms / 1000)).toFixed(0)} MiB/s`;
const items = (ms) => `${Math.round(COUNT_ITEMS / (ms / 1000))} items/s`;
console.log(`bufferutil: ${bufferutilStatus()}`);
console.log(`u8 input, ${mib} MiB in ${U8_BATCH / 1024} KiB batches (best of 3)`);
console.log(`  bare ws, no protocol         ${raw.toFixed(0)} ms  ${rate(raw)}`);
console.log(
  `  digest, synchronous=normal   ${digestNormal.toFixed(0)} ms  ${rate(digestNormal)}  ratio to bare ws ${(raw / digestNormal).toFixed(2)}x`,
);
console.log(
  `  digest, synchronous=full     ${digestFull.toFixed(0)} ms  ${rate(digestFull)}  ratio to bare ws ${(raw / digestFull).toFixed(2)}x`,
);
const strings = (ms) => `${Math.round(STRING_ITEMS / (ms / 1000))} items/s`;
console.log(`reverse: ${STRING_ITEMS} string items of 64 bytes in, as many out (best of 3)`);
console.log(`  bare ws, no protocol, one way  ${rawStrings.toFixed(0)} ms  ${strings(rawStrings)}`);
console.log(
  `  synchronous=normal           ${reverseNormal.toFixed(0)} ms  ${strings(reverseNormal)}  ratio to bare ws ${(rawStrings / reverseNormal).toFixed(2)}x`,
);
console.log(
  `  synchronous=full             ${reverseFull.toFixed(0)} ms  ${strings(reverseFull)}  ratio to bare ws ${(rawStrings / reverseFull).toFixed(2)}x`,
);
console.log(
  `  full, store holding ${3 * mib} MiB of u8   ${reverseAfterBlobs.toFixed(0)} ms  ${strings(reverseAfterBlobs)}  ratio to bare ws ${(rawStrings / reverseAfterBlobs).toFixed(2)}x`,
);
console.log(`output items, count to ${COUNT_ITEMS} (best of 3)`);
console.log(`  synchronous=normal           ${countNormal.toFixed(0)} ms  ${items(countNormal)}`);
console.log(
  `  synchronous=full             ${countFull.toFixed(0)} ms  ${items(countFull)}  ratio to normal ${(countFull / countNormal).toFixed(2)}x`,
);

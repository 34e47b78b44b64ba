#!/usr/bin/env node
/**
 * Scale on one node: BENCH_IDLE (1000) concurrent sessions whose
 * streams sit idle, then BENCH_UPLOADS (100) concurrent `digest` uploads on
 * top of them; memory per idle session and a check that nothing is lost.
 *
 *   node --expose-gc bench/scale.mjs        # build first; --expose-gc makes the memory figures live bytes
 *   BENCH_IDLE=1000 BENCH_UPLOADS=100 BENCH_UPLOAD_MIB=4 node --expose-gc bench/scale.mjs
 *   BENCH_NODE_BUDGET_MIB=64 node --expose-gc bench/scale.mjs   # the server's maxQueuedBytesPerNode (default 256 MiB)
 *
 * The server is the embedded server (SQLite, synchronous = FULL) in a forked
 * process (`peer.mjs server`, which inherits --expose-gc and reports its
 * memory after a full GC). This process is the client side: one
 * @golem-stream/client, one WebSocket connection per invocation.
 *
 * 1. Idle sessions: `reverse` invocations whose input source yields nothing
 *    until released. Each holds an accepted session, an input stream and an
 *    output stream, both idle. Memory per idle session is the server's
 *    growth (RSS and JS heap + array buffers, after GC) over the count.
 * 2. Uploads: `digest` of BENCH_UPLOAD_MIB random MiB each, all at once, in
 *    256 KiB chunks, while the idle sessions stay open. Every digest and byte
 *    count is checked against the data sent.
 * 3. The idle sessions are released: each sends three strings and ends; every
 *    output must be the reversed inputs in order. Nothing may be lost.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { createClient, inputStream } from "@golem-stream/client";
import { bufferutilStatus, startPeer } from "./throughput.mjs";

const IDLE = Number(process.env.BENCH_IDLE ?? 1000);
const UPLOADS = Number(process.env.BENCH_UPLOADS ?? 100);
const UPLOAD_MIB = Number(process.env.BENCH_UPLOAD_MIB ?? 4);
const NODE_BUDGET_MIB = process.env.BENCH_NODE_BUDGET_MIB === undefined ? undefined : Number(process.env.BENCH_NODE_BUDGET_MIB);
const OPEN_AT_ONCE = 50;
const MIB = 1024 * 1024;
const demo = {
  application: "demo",
  environment: "default",
  agentType: "echo",
  constructorParameters: { kind: "record", value: { fields: [{ kind: "string", value: "scale" }] } },
};
const params = (...fields) => ({ kind: "record", value: { fields } });

const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-scale-"));
// The forked server reads its limits from the environment it inherits (peer.mjs).
if (NODE_BUDGET_MIB !== undefined)
  process.env.BENCH_SERVER_LIMITS = JSON.stringify({ maxQueuedBytesPerNode: NODE_BUDGET_MIB * 1024 * 1024 });
const server = await startPeer("server", dataDir);
const client = createClient({ url: server.url, token: "t" });
const memory = async () => (await server.request("memory")).now;
const mib = (bytes) => (bytes / MIB).toFixed(1);
const kib = (bytes) => (bytes / 1024).toFixed(1);

// Warm up (modules, SQLite, JIT) before the baseline.
{
  const warm = await openIdle(0);
  warm.release();
  await warm.check();
}
const before = await memory();
const clientBefore = process.memoryUsage();

/** One `reverse` invocation whose input waits for `release()`; `check()` verifies its output. */
async function openIdle(index) {
  let release;
  const gate = new Promise((resolve) => (release = resolve));
  const words = [`idle-${index}-a`, `idle-${index}-b`, `idle-${index}-c`];
  async function* source() {
    await gate;
    yield* words;
  }
  const call = client.invoke({ ...demo, method: "reverse", methodParameters: params(inputStream.strings(source())) });
  const result = await call.result;
  const stream = result.streams[0];
  return {
    release,
    async check() {
      const seen = [];
      for await (const item of stream) seen.push(item.value);
      await call.finished;
      const expected = words.map((w) => Array.from(w).reverse().join(""));
      if (JSON.stringify(seen) !== JSON.stringify(expected)) throw new Error(`idle session ${index}: got ${JSON.stringify(seen)}`);
    },
  };
}

const opening = Date.now();
const idle = [];
for (let at = 0; at < IDLE; at += OPEN_AT_ONCE) {
  const batch = Array.from({ length: Math.min(OPEN_AT_ONCE, IDLE - at) }, (_, i) => openIdle(at + i));
  idle.push(...(await Promise.all(batch)));
}
const openSeconds = (Date.now() - opening) / 1000;
const withIdle = await memory();
const clientWithIdle = process.memoryUsage();

// Uploads on top of the idle sessions.
const uploads = Array.from({ length: UPLOADS }, () => {
  const data = randomBytes(UPLOAD_MIB * MIB);
  const chunks = [];
  for (let at = 0; at < data.length; at += 256 * 1024) chunks.push(data.subarray(at, at + 256 * 1024));
  return { chunks, size: data.length, hash: createHash("sha256").update(data).digest("hex") };
});
const uploading = Date.now();
const digests = await Promise.all(
  uploads.map(async ({ chunks }) => {
    const call = client.invoke({ ...demo, method: "digest", methodParameters: params(inputStream.bytes(chunks)) });
    const result = await call.result;
    await call.finished;
    return result.value.value.fields.map((field) => field.value);
  }),
);
const uploadSeconds = (Date.now() - uploading) / 1000;
const duringUploads = await server.request("memory"); // its peak covers the uploads
digests.forEach(([total, hash], i) => {
  if (total !== String(uploads[i].size) || hash !== uploads[i].hash)
    throw new Error(`upload ${i}: digest ${hash} of ${total} bytes is wrong`);
});

// Release the idle sessions; every one must deliver its reversed words.
const releasing = Date.now();
for (const session of idle) session.release();
await Promise.all(idle.map((session) => session.check()));
const releaseSeconds = (Date.now() - releasing) / 1000;
const after = await memory();

await server.close();
rmSync(dataDir, { recursive: true, force: true });

const gcNote = globalThis.gc === undefined ? "run with --expose-gc for live-byte figures; these include garbage" : "after a full GC";
console.log(
  `node ${process.version}, ${availableParallelism()} cores, bufferutil ${bufferutilStatus()}; embedded server (SQLite synchronous=FULL) forked, client here`,
);
console.log(
  `${IDLE} idle sessions (reverse, input and output stream open), opened ${OPEN_AT_ONCE} at a time in ${openSeconds.toFixed(1)} s`,
);
const rss = withIdle.rss - before.rss;
const heap = withIdle.heapUsed + withIdle.arrayBuffers - (before.heapUsed + before.arrayBuffers);
console.log(`  server memory per idle session (${gcNote}): RSS ${kib(rss / IDLE)} KiB, JS heap + array buffers ${kib(heap / IDLE)} KiB`);
console.log(
  `  server total: RSS ${mib(before.rss)} -> ${mib(withIdle.rss)} MiB, heap ${mib(before.heapUsed)} -> ${mib(withIdle.heapUsed)} MiB`,
);
console.log(
  `  client memory per idle session (no GC): RSS ${kib((clientWithIdle.rss - clientBefore.rss) / IDLE)} KiB, heap ${kib((clientWithIdle.heapUsed - clientBefore.heapUsed) / IDLE)} KiB`,
);
console.log(
  `${UPLOADS} concurrent digest uploads of ${UPLOAD_MIB} MiB beside them: ${((UPLOADS * UPLOAD_MIB) / uploadSeconds).toFixed(0)} MiB/s together, ${uploadSeconds.toFixed(1)} s; every digest correct`,
);
const { buffered } = duringUploads;
console.log(
  `  server's node byte budget (maxQueuedBytesPerNode) ${mib(buffered.capacity)} MiB; the most it held during the uploads ${mib(buffered.peak)} MiB`,
);
console.log(
  `  server peak during the uploads: RSS ${mib(duringUploads.peak.rss)} MiB, JS heap + array buffers ${mib(duringUploads.peak.heap)} MiB ` +
    `(+${mib(duringUploads.peak.heap - withIdle.heapUsed - withIdle.arrayBuffers)} MiB over the idle sessions' live heap + buffers)`,
);
console.log(
  `idle sessions released: ${IDLE} reversed outputs correct in ${releaseSeconds.toFixed(1)} s; server RSS at the end ${mib(after.rss)} MiB`,
);

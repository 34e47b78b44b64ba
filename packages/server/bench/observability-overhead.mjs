// Cost of the operations side (metrics, logs, tracing) on the small-item hot path: the
// same `tally` of 64-byte string items against two embedded servers in this
// process, one with everything off (the library default) and one with
// Prometheus metrics, health endpoints and a pino JSON logger (to /dev/null)
// on, as `golem-stream serve --metrics` runs. Alternating rounds; medians.
// Run: npx tsc -p tsconfig.json && node bench/observability-overhead.mjs
import { mkdtempSync, rmSync, openSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import WebSocket from "ws";
import { pino } from "pino";
import { decodeServerMessage, encodeMessage, SESSION_PATH, SUBPROTOCOL } from "@golem-stream/wire";
import { loggerFromPino, startEmbeddedServer } from "../dist/index.js";

const TOKEN = "bench";
const ITEMS = Number(process.env.BENCH_ITEMS ?? 20000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const STRING = "x".repeat(64);

async function tally(url) {
  const socket = new WebSocket(`${url}${SESSION_PATH}`, [SUBPROTOCOL], { headers: { authorization: `Bearer ${TOKEN}` } });
  await new Promise((resolve, reject) => {
    socket.once("open", resolve);
    socket.once("error", reject);
  });
  const begin = performance.now();
  const done = new Promise((resolve, reject) => {
    socket.on("message", (data, isBinary) => {
      const message = decodeServerMessage(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), isBinary);
      if (message.type === "invocationAccepted") {
        const channel = message.mappings[0].channel;
        for (let i = 0; i < ITEMS; i++)
          socket.send(encodeMessage({ type: "inputStreamItem", channel, sequence: BigInt(i), value: { kind: "string", value: STRING } }));
        socket.send(encodeMessage({ type: "inputStreamEnd", channel, sequence: BigInt(ITEMS) }));
      } else if (message.type === "invocationFinished") resolve();
      else if (message.type === "invocationRejected") reject(new Error(message.code));
    });
  });
  socket.send(
    encodeMessage({
      type: "invocationStart",
      attemptId: randomUUID(),
      config: [],
      idempotencyKey: randomUUID(),
      methodParameters: { kind: "record", value: { fields: [{ kind: "stream", value: { provisionalRef: randomUUID() } }] } },
      selector: {
        agentType: "echo",
        application: "demo",
        environment: "default",
        method: "tally",
        constructorParameters: { kind: "record", value: { fields: [{ kind: "string", value: "bench" }] } },
      },
    }),
  );
  await done;
  const ms = performance.now() - begin;
  socket.close();
  return ms;
}

const dirs = [mkdtempSync(join(tmpdir(), "ops-off-")), mkdtempSync(join(tmpdir(), "ops-on-"))];
const off = await startEmbeddedServer({ dataDir: dirs[0], tokens: [TOKEN] });
const logger = loggerFromPino(pino({ level: "info" }, pino.destination({ fd: openSync("/dev/null", "w"), sync: false })));
const on = await startEmbeddedServer({
  dataDir: dirs[1],
  tokens: [TOKEN],
  metrics: { processMetrics: true },
  healthEndpoints: true,
  logger,
});
await tally(off.url);
await tally(on.url);
const times = { off: [], on: [] };
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? ["off", "on"] : ["on", "off"];
  for (const name of order) times[name].push(await tally(name === "off" ? off.url : on.url));
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const rate = (ms) => `${Math.round(ITEMS / (ms / 1000)).toLocaleString("en")} items/s`;
console.log(`tally, ${ITEMS} string items of 64 bytes, SQLite synchronous=full, medians of ${ROUNDS} alternating rounds`);
console.log(`  operations off (library default)        ${median(times.off).toFixed(0)} ms  ${rate(median(times.off))}`);
console.log(
  `  metrics + health + pino logger on       ${median(times.on).toFixed(0)} ms  ${rate(median(times.on))}  ratio ${(median(times.off) / median(times.on)).toFixed(3)}x`,
);
await Promise.all([off.close(), on.close()]);
for (const dir of dirs) rmSync(dir, { recursive: true, force: true });

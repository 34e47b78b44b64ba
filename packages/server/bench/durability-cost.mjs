// What declaring a method replayable costs on its first run (docs/durable-execution.md, What it
// costs): `digest` (u8 input) and `tally` (64-byte strings) of the demo, which is replayable, beside
// the same implementations declared `durability: "none"` (application `plain`), in one embedded
// server (SQLite, synchronous=full) and the same rounds, alternating, each row's order reversed
// every other round, after one round that is not counted. Prints each row's median rate and the median of each round's ratio.
// Run: pnpm -F @golem-stream/server build && node packages/server/bench/durability-cost.mjs
// Sizes: BENCH_MIB (64), BENCH_ITEMS (20000), BENCH_ROUNDS (3). It prints, it never asserts,
// except that every result counts what was sent (a bench that loses input must not look fast).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHash, randomUUID } from "node:crypto";
import WebSocket from "ws";
import { decodeServerMessage, encodeMessage, SESSION_PATH, SUBPROTOCOL } from "@golem-stream/wire";
import { defineCatalogue, startEmbeddedServer } from "../dist/index.js";
import { ECHO_AGENT_TYPE } from "../dist/demo/methods.js";

const TOKEN = "bench";
const MIB = 1024 * 1024;
const U8_MIB = Number(process.env.BENCH_MIB ?? 64);
const U8_BATCH = MIB;
const STRING_ITEMS = Number(process.env.BENCH_ITEMS ?? 20000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const STRING = "x".repeat(64);
const BATCH = new Uint8Array(U8_BATCH).fill(7);
const EXPECTED_SHA256 = (() => {
  const hash = createHash("sha256");
  for (let i = 0; i < U8_MIB; i++) hash.update(BATCH);
  return hash.digest("hex");
})();

/** The demo's `echo` with every method declared not replayable: the same code, the other durability. */
const PLAIN_ECHO = {
  ...ECHO_AGENT_TYPE,
  durability: "none",
  methods: ECHO_AGENT_TYPE.methods.map((method) => ({ ...method, durability: "none" })),
};

function start(application, method) {
  return {
    type: "invocationStart",
    attemptId: randomUUID(),
    config: [],
    idempotencyKey: randomUUID(),
    methodParameters: { kind: "record", value: { fields: [{ kind: "stream", value: { provisionalRef: randomUUID() } }] } },
    selector: {
      agentType: "echo",
      application,
      environment: "default",
      method,
      constructorParameters: { kind: "record", value: { fields: [{ kind: "string", value: "bench" }] } },
    },
  };
}

/**
 * One invocation whose input `send(socket, channel)` writes once it is accepted; resolves with its
 * seconds and result fields. Each send waits for the socket's buffer to drain below 8 MiB, as a
 * well-behaved producer does.
 */
function invoke(url, message, send) {
  const socket = new WebSocket(`${url}${SESSION_PATH}`, [SUBPROTOCOL], {
    headers: { authorization: `Bearer ${TOKEN}` },
    perMessageDeflate: false,
  });
  return new Promise((resolve, reject) => {
    let begin;
    let fields;
    socket.once("error", reject);
    socket.once("open", () => {
      begin = process.hrtime.bigint();
      socket.send(encodeMessage(message));
    });
    socket.on("message", (data, isBinary) => {
      const decoded = decodeServerMessage(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), isBinary);
      if (decoded.type === "invocationAccepted") send(socket, decoded.mappings[0].channel).catch(reject);
      if (decoded.type === "invocationRejected") reject(new Error(decoded.message));
      if (decoded.type === "invocationResult") fields = decoded.result.value.value.fields.map((field) => field.value);
      if (decoded.type === "invocationFinished") {
        if (decoded.outcome.kind !== "success") reject(new Error(`invocation ${decoded.outcome.kind}: ${decoded.outcome.message}`));
        resolve({ seconds: Number(process.hrtime.bigint() - begin) / 1e9, fields });
        socket.close();
      }
    });
  });
}

async function drained(socket) {
  while (socket.bufferedAmount > 8 * MIB) await new Promise((resolve) => setImmediate(resolve));
}

async function sendBytes(socket, channel) {
  for (let i = 0; i < U8_MIB; i++) {
    socket.send(encodeMessage({ type: "input-u8", channel, sequence: BigInt(i * U8_BATCH), payload: BATCH }), { binary: true });
    await drained(socket);
  }
  socket.send(encodeMessage({ type: "inputStreamEnd", channel, sequence: BigInt(U8_MIB * U8_BATCH) }));
}

async function sendStrings(socket, channel) {
  for (let i = 0; i < STRING_ITEMS; i++) {
    socket.send(encodeMessage({ type: "inputStreamItem", channel, sequence: BigInt(i), value: { kind: "string", value: STRING } }));
    if (i % 1024 === 0) await drained(socket);
  }
  socket.send(encodeMessage({ type: "inputStreamEnd", channel, sequence: BigInt(STRING_ITEMS) }));
}

async function digest(url, application) {
  const { seconds, fields } = await invoke(url, start(application, "digest"), sendBytes);
  if (fields[0] !== String(U8_MIB * U8_BATCH) || fields[1] !== EXPECTED_SHA256)
    throw new Error(`digest of ${application}: ${JSON.stringify(fields)}`);
  return seconds;
}

async function tally(url, application) {
  const { seconds, fields } = await invoke(url, start(application, "tally"), sendStrings);
  if (fields[0] !== String(STRING_ITEMS) || fields[1] !== String(STRING_ITEMS * STRING.length))
    throw new Error(`tally of ${application}: ${JSON.stringify(fields)}`);
  return seconds;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-durability-bench-"));
const server = await startEmbeddedServer({
  dataDir,
  tokens: [TOKEN],
  synchronous: "full",
  agents: defineCatalogue({ applications: { plain: { default: [PLAIN_ECHO] } } }),
  demo: true,
});
const rows = {
  digestReplay: () => digest(server.url, "demo"),
  digestNone: () => digest(server.url, "plain"),
  tallyReplay: () => tally(server.url, "demo"),
  tallyNone: () => tally(server.url, "plain"),
};
const seconds = {};
try {
  // One round first that is not counted: the first rows would otherwise pay for the JIT and the
  // database's first pages.
  for (const run of Object.values(rows)) await run();
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? Object.entries(rows) : Object.entries(rows).reverse();
    for (const [name, run] of order) (seconds[name] ??= []).push(await run());
  }
} finally {
  await server.close();
  rmSync(dataDir, { recursive: true, force: true });
}

const ratios = (a, b) => seconds[b].map((t, round) => t / seconds[a][round]);
const line = (label, name, units, unit) => `  ${label.padEnd(34)} ${(units / median(seconds[name])).toFixed(0).padStart(8)} ${unit}`;
const spread = (values) => `${median(values).toFixed(2)} (rounds ${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)})`;
console.log(`durability: "replay" beside "none", one embedded server (SQLite, synchronous=full), ${ROUNDS} rounds, medians`);
console.log(`digest of ${U8_MIB} MiB in 1 MiB batches`);
console.log(line(`durability "replay" (demo)`, "digestReplay", U8_MIB, "MiB/s"));
console.log(line(`durability "none" (plain)`, "digestNone", U8_MIB, "MiB/s"));
console.log(`  replay rate / none rate            ${spread(ratios("digestReplay", "digestNone"))}`);
console.log(`tally of ${STRING_ITEMS} strings of ${STRING.length} bytes`);
console.log(line(`durability "replay" (demo)`, "tallyReplay", STRING_ITEMS, "items/s"));
console.log(line(`durability "none" (plain)`, "tallyNone", STRING_ITEMS, "items/s"));
console.log(`  replay rate / none rate            ${spread(ratios("tallyReplay", "tallyNone"))}`);

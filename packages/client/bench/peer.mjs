#!/usr/bin/env node
/**
 * The far end of `bench/run.mjs`, run as its own process (`child_process.fork`)
 * so that it has its own event loop and, on a machine with two cores or more,
 * its own core — as a server does in any real deployment.
 *
 *   node bench/peer.mjs raw               # bare ws sink: counts messages, replies "done"
 *   node bench/peer.mjs ack               # minimal protocol peer that ACKs every item at once
 *   node bench/peer.mjs server <dataDir>  # startEmbeddedServer (SQLite, synchronous = FULL)
 *   node bench/peer.mjs server <dataDir> inline  # the same, every payload in SQLite's pages
 *                                                # (payloadFileThreshold: Infinity), for comparison
 *   node bench/peer.mjs server <dataDir> files <module>  # the same, with `startEmbeddedServer` from another build
 *                                                # of @golem-stream/server (bench/compare.mjs: before/after)
 *   node bench/peer.mjs durable <dataDir> # the hand-written durable peer (bench/durable-peer.mjs)
 *   node bench/peer.mjs ds <dataDir>      # Durable Streams' file-backed server (bench/durable-streams-peer.mjs)
 *   node bench/peer.mjs timed <dataDir> [module]  # the embedded server, its `count` agent noting when it yields each item
 *   node bench/peer.mjs store <dataDir> <module> <json>  # startEmbeddedServer on the store that
 *                                                # `(await import(module)).createStore(JSON.parse(json))`
 *                                                # resolves with: `{ store, cluster? }` (the PostgreSQL
 *                                                # rows of packages/store-postgres/bench/run.mjs)
 *
 * It reports `{ url }` over the IPC channel when it listens, answers "cpu"
 * with `{ cpu: process.cpuUsage() }`, answers "memory" with `{ memory }` (see
 * `memoryReport` in memory-sampler.mjs; used by bench/memory.mjs), and exits when the parent sends
 * "close" or disconnects. In server mode it also answers "counts" with `{ counts: { input, output, usage } }`:
 * the input and output items its store has committed since the first such request and
 * `process.memoryUsage()` now, without a GC (used by bench/unread-output.mjs). "allocations-start"
 * and "allocations-stop" bracket a sampling of every allocation (the inspector's
 * heap profile, collected objects included, as `{ "allocations-stop": profile }`; bench/allocations.mjs).
 */
import { readFileSync } from "node:fs";
import { WebSocketServer } from "ws";
import { SUBPROTOCOL, decodeClientMessage, encodeMessage } from "@golem-stream/wire";
import { SqliteSessionStore, startEmbeddedServer } from "@golem-stream/server";
import { memoryReport } from "./memory-sampler.mjs";
import { startDurablePeer } from "./durable-peer.mjs";

const MIB = 1024 * 1024;
const [mode, dataDir, payloads, storeArgs] = process.argv.slice(2);

function listening(wss) {
  return new Promise((resolve) =>
    wss.once("listening", () => resolve({ url: `ws://127.0.0.1:${wss.address().port}`, close: () => new Promise((r) => wss.close(r)) })),
  );
}

/** Bare ws: the connection's URL says how many messages to expect (`/?count=N`); one reply at the end. */
function startRawSink() {
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1", perMessageDeflate: false, maxPayload: 32 * MIB });
  wss.on("connection", (socket, request) => {
    const expected = Number(new URL(request.url, "ws://x").searchParams.get("count"));
    let seen = 0;
    socket.on("message", () => {
      if (++seen === expected) socket.send("done");
    });
  });
  return listening(wss);
}

/** Decodes every client message strictly (as a server must) and acknowledges input at once, storing nothing. */
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
            mappings: [
              {
                channel: 1,
                direction: "input",
                streamToken: "input",
                provisionalRef: ref,
                inputHighWater: { sequence: 0n, terminal: false },
              },
            ],
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
  return listening(wss);
}

/** The embedded server (demo host, keyring in dataDir) on a store another module makes, e.g. PostgreSQL. */
async function startOnStore() {
  const { store, cluster } = await (await import(payloads)).createStore(JSON.parse(storeArgs));
  return startEmbeddedServer({ port: 0, host: "127.0.0.1", dataDir, tokens: ["t"], store, ...(cluster === undefined ? {} : { cluster }) });
}

/**
 * The embedded server whose `count` agent notes, for every item, when it called `writer.write`
 * (`process.hrtime.bigint()`: the system's monotonic clock, comparable across processes);
 * answers "yields" with `{ yields: [[value, ns], ...] }` since the last request (bench/latency.mjs).
 */
let yields = [];
async function startTimedServer() {
  // Another build of the server (bench/latency.mjs with BENCH_SERVER_MODULE) when given.
  const { StaticAgentHost, startEmbeddedServer } = await import(payloads ?? "@golem-stream/server");
  const invoke = StaticAgentHost.prototype.invoke;
  StaticAgentHost.prototype.invoke = function (context) {
    if (context.method !== "count") return invoke.call(this, context);
    const output = (source) =>
      context.output(async (writer) =>
        source({
          signal: writer.signal,
          write: (item) => {
            yields.push([item.value, String(process.hrtime.bigint())]);
            return writer.write(item);
          },
        }),
      );
    const timed = new Proxy(context, {
      get: (target, key) => (key === "output" ? output : typeof target[key] === "function" ? target[key].bind(target) : target[key]),
    });
    return invoke.call(this, timed);
  };
  return startEmbeddedServer({ port: 0, host: "127.0.0.1", dataDir, tokens: ["t"] });
}

const peer =
  mode === "raw"
    ? await startRawSink()
    : mode === "ack"
      ? await startAckPeer()
      : mode === "server"
        ? await (storeArgs === undefined ? startEmbeddedServer : (await import(storeArgs)).startEmbeddedServer)({
            port: 0,
            host: "127.0.0.1",
            dataDir,
            tokens: ["t"],
            ...(payloads === "inline" ? { payloadFileThreshold: Number.POSITIVE_INFINITY } : {}),
            // Server limits for a bench run (scale.mjs: the node's byte budget), as JSON.
            ...(process.env.BENCH_SERVER_LIMITS ? { limits: JSON.parse(process.env.BENCH_SERVER_LIMITS) } : {}),
          })
        : mode === "timed"
          ? await startTimedServer()
          : mode === "store"
            ? await startOnStore()
            : mode === "durable"
              ? await startDurablePeer(dataDir)
              : mode === "ds"
                ? await (await import("./durable-streams-peer.mjs")).startDurableStreamsPeer(dataDir)
                : undefined;
if (peer === undefined) {
  console.error(
    "usage: peer.mjs raw | ack | server <dataDir> [inline] | store <dataDir> <module> <json> | durable <dataDir> | ds <dataDir>",
  );
  process.exit(2);
}

/**
 * This process's main thread so far, in microseconds: the CPU it ran (`mainThread`) and the time it
 * was ready to run but waited for a core (`mainThreadWait`), from the scheduler's own accounting
 * (/proc/…/schedstat, in nanoseconds). Without schedstat, the CPU from /proc/…/stat (10 ms ticks)
 * and no wait; without /proc, NaN for both.
 */
function mainThread() {
  const task = `/proc/self/task/${process.pid}`;
  try {
    const [run, wait] = readFileSync(`${task}/schedstat`, "utf8").trim().split(" ").map(Number);
    return { mainThread: run / 1000, mainThreadWait: wait / 1000 };
  } catch {
    // A kernel without CONFIG_SCHED_INFO has no schedstat: fall back to the ticks of stat.
  }
  try {
    const stat = readFileSync(`${task}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { mainThread: (Number(fields[11]) + Number(fields[12])) * 10_000, mainThreadWait: Number.NaN };
  } catch {
    return { mainThread: Number.NaN, mainThreadWait: Number.NaN };
  }
}

const stop = async () => {
  await peer.close();
  process.exit(0);
};
process.on("message", (message) => {
  if (message === "close") void stop();
  // CPU time of this process (all threads), so a row can report what the receiver spent.
  else if (message === "cpu") process.send({ cpu: { ...process.cpuUsage(), ...mainThread() } });
  // With the embedded server, also its node byte budget: held now, capacity, highest since the last request.
  else if (message === "memory")
    void memoryReport().then((memory) => process.send({ memory: { ...memory, buffered: peer.server?.bufferedBytes?.() } }));
  // Durably accepted input items and recorded output items, over all streams (bench/unread-output.mjs).
  else if (message === "counts") process.send({ counts: storeCounts() });
  else if (message === "yields") process.send({ yields: yields.splice(0) });
  // Every allocation between the two, sampled (bench/allocations.mjs): the garbage too, not only what survives.
  else if (message === "allocations-start")
    void allocationSampler()
      .then((post) => post("HeapProfiler.startSampling", samplingOptions))
      .then(() => process.send({ "allocations-start": true }));
  else if (message === "allocations-stop")
    void allocationSampler()
      .then((post) => post("HeapProfiler.stopSampling"))
      .then(({ profile }) => process.send({ "allocations-stop": profile }));
});

const samplingOptions = { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true };
let sampler;
/** This process's inspector session, for its heap sampler: `post(method, params)` resolves with the answer. */
function allocationSampler() {
  sampler ??= import("node:inspector").then(({ Session }) => {
    const session = new Session();
    session.connect();
    return (method, params) =>
      new Promise((resolve, reject) => session.post(method, params, (error, answer) => (error ? reject(error) : resolve(answer))));
  });
  return sampler;
}

let counts;
/**
 * Items the store has committed since the first "counts" request. Counted by
 * wrapping the SQLite store's two log writes (the database itself is opened
 * in exclusive mode, so it cannot be read from outside); they resolve only
 * after the commit, as the ACKs they lead to are sent.
 */
function storeCounts() {
  if (counts === undefined) {
    counts = { input: 0, output: 0 };
    const proto = SqliteSessionStore.prototype;
    const { acceptInput, appendOutput } = proto;
    proto.acceptInput = function (chunk, ...rest) {
      const committed = acceptInput.call(this, chunk, ...rest);
      void committed.then(
        () => (counts.input += Number(chunk.itemCount)),
        () => undefined,
      );
      return committed;
    };
    proto.appendOutput = function (event, ...rest) {
      const committed = appendOutput.call(this, event, ...rest);
      if (event.event === "item")
        void committed.then(
          () => (counts.output += Number(event.itemCount)),
          () => undefined,
        );
      return committed;
    };
  }
  return { ...counts, usage: process.memoryUsage() };
}
process.on("disconnect", () => void stop());
process.send({ url: peer.url });

#!/usr/bin/env node
/**
 * Memory of @golem-stream/client and the embedded server while they move far
 * more data than any of their bounds ("the runtime's memory stays bounded";
 * docs/memory.md). Speed is bench/run.mjs; this prints how much memory each side
 * needed, and whether that grows with the size moved.
 *
 *   node bench/memory.mjs                       # after `pnpm build` at the root; about a minute
 *   MEMORY_ONLY=upload,slow node bench/memory.mjs
 *   MEMORY_SMALL_MIB=512 MEMORY_BIG_MIB=2048 MEMORY_SESSIONS=400 node bench/memory.mjs
 *   MEMORY_DEBUG=1 node bench/memory.mjs        # also prints every window's live sizes
 *
 * Method. Every run gets a fresh server process (bench/peer.mjs server, SQLite
 * synchronous = FULL) and a fresh client process (this file, forked with the
 * argument `client`), both with --expose-gc. Each first runs a small warm-up
 * invocation of the same kind, so code loading, JIT and SQLite's caches are
 * not counted; the idle baseline is then taken after a full GC. Measured:
 *
 *   RSS       peak over the baseline. A window's peak is the kernel's lifetime
 *             peak (`resourceUsage().maxRSS`, exact) when that rose during the
 *             window, else the highest 20 ms sample.
 *   heap+buf  `heapUsed + arrayBuffers` (every Buffer and Uint8Array backing
 *             store), peak of the 20 ms samples, over the baseline. Not
 *             `external`: it already contains `arrayBuffers`, and V8 updates it
 *             only at the next GC, so it keeps counting freed buffers.
 *   live      a second run of the same scenario that measures both processes
 *             every 250 ms after a full GC: what the runtime still holds, not
 *             garbage V8 has yet to collect. The peaks above include that
 *             garbage, and V8 lets about 64 MiB of dead buffers pile up before
 *             it collects, so peaks wobble with GC timing; live does not.
 *
 * Scenarios (SMALL = MEMORY_SMALL_MIB, 128; BIG = MEMORY_BIG_MIB, 512):
 *   upload    `digest` of stream<u8> in 1 MiB batches, each a fresh buffer (a
 *             runtime that kept them would show it), SMALL then BIG MiB.
 *   slow      `blobs` of 1 MiB stream<binary> items, one read every
 *             MEMORY_DELAY_MS (10) ms: slower than loopback delivers, so both
 *             sides run into their bounds. SMALL then BIG items.
 *   stall     the same with BIG items, but the consumer stops reading entirely
 *             for one second halfway; "during the stall" is the growth from
 *             the moment it stopped (measured after a full GC) to the stall's
 *             peak.
 *   large     `blobs` of 16 MiB items (the largest binary message), BIG MiB,
 *             read at the same bytes per second (16 x the delay per item).
 *   sessions  N concurrent `count` invocations (MEMORY_SESSIONS, 200; 40 items
 *             50 ms apart); each consumer reads one item, then all wait until
 *             both processes are measured with all N live. Run for N/4 and N:
 *             the slope between them is the memory per live session, fixed
 *             costs cancelled.
 */
import { fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { memoryReport } from "./memory-sampler.mjs";

const MIB = 1024 * 1024;
const SMALL_MIB = Number(process.env.MEMORY_SMALL_MIB ?? 128);
const BIG_MIB = Number(process.env.MEMORY_BIG_MIB ?? 512);
const DELAY_MS = Number(process.env.MEMORY_DELAY_MS ?? 10);
const SESSIONS = Number(process.env.MEMORY_SESSIONS ?? 200);
const LIVE_PROBE_MS = 250;
const LARGE_ITEM_MIB = 16;
const ctor = { kind: "record", value: { fields: [{ kind: "string", value: "memory" }] } };
const demo = { application: "demo", environment: "default", agentType: "echo", constructorParameters: ctor };
const u32 = (value) => ({ kind: "u32", value });
const params = (...fields) => ({ kind: "record", value: { fields } });

/** Resolves with the value under `key` of the next IPC message that has it. */
function nextMessage(channel, key) {
  return new Promise((resolve) => {
    const on = (message) => {
      if (typeof message !== "object" || message === null || !(key in message)) return;
      channel.off("message", on);
      resolve(message[key]);
    };
    channel.on("message", on);
  });
}

// ---- the client process: runs what it is told, marks the moments the parent measures ----

async function clientMain() {
  const { createClient, inputStream } = await import("@golem-stream/client");
  const client = (url) => createClient({ url, token: "t" });

  async function digest(url, mib) {
    async function* batches() {
      for (let i = 0; i < mib; i++) yield new Uint8Array(MIB).fill(i & 0xff);
    }
    const call = client(url).invoke({ ...demo, method: "digest", methodParameters: params(inputStream.bytes(batches())) });
    const result = await call.result;
    await call.finished;
    // A bench that lost bytes must not look lean.
    const total = result.value.value.fields[0].value;
    if (total !== String(mib * MIB)) throw new Error(`digest counted ${total} bytes, sent ${mib * MIB}`);
    return { bytes: mib * MIB, items: mib };
  }

  /** Reads `count` blobs of `size`, `delayMs` apart; `stallAt` items in, stops until the parent says go. */
  async function blobs(url, count, size, delayMs, stallAt) {
    const call = client(url).invoke({ ...demo, method: "blobs", methodParameters: params(u32(count), u32(size)) });
    const result = await call.result;
    let items = 0;
    let bytes = 0;
    for await (const blob of result.streams[0]) {
      items++;
      bytes += blob.bytes.length;
      if (items === stallAt) {
        const go = nextMessage(process, "go");
        process.send({ mark: "stall" });
        await go;
      } else if (delayMs > 0) await sleep(delayMs);
    }
    await call.finished;
    if (items !== count || bytes !== count * size) throw new Error(`blobs delivered ${items} items, ${bytes} bytes`);
    return { bytes, items };
  }

  /** `n` concurrent `count` invocations; each reads one item, then (if `wait`) all wait for the parent's go. */
  async function sessions(url, n, wait) {
    const to = 40;
    const c = client(url);
    let live = 0;
    const go = wait ? nextMessage(process, "go") : Promise.resolve();
    const one = async () => {
      const call = c.invoke({ ...demo, method: "count", methodParameters: params(u32(to), u32(50)) });
      const result = await call.result;
      let items = 0;
      for await (const _ of result.streams[0]) {
        if (++items === 1 && ++live === n && wait) process.send({ mark: "live" });
        if (items === 1) await go;
      }
      await call.finished;
      if (items !== to) throw new Error(`count delivered ${items} items`);
    };
    await Promise.all(Array.from({ length: n }, one));
    return { bytes: 0, items: n * to };
  }

  const scenarios = { digest, blobs, sessions };
  process.on("message", (message) => {
    if (message === "memory") void memoryReport().then((memory) => process.send({ memory }));
    else if (message === "close") process.exit(0);
    else if (typeof message === "object" && message !== null && "run" in message) {
      const { name, args } = message.run;
      scenarios[name](...args).then(
        (moved) => process.send({ done: moved }),
        (error) => {
          console.error(error);
          process.exit(1);
        },
      );
    }
  });
  process.on("disconnect", () => process.exit(0));
  process.send({ ready: true });
}

// ---- the parent: forks both sides, measures around each phase ----

function child(path, args) {
  const proc = fork(fileURLToPath(new URL(path, import.meta.url)), args, {
    stdio: "inherit",
    execArgv: [...process.execArgv, "--expose-gc"],
  });
  let closing = false;
  proc.once("exit", (code) => {
    if (!closing) {
      console.error(`${path} ${args.join(" ")} exited with ${code}`);
      process.exit(1);
    }
  });
  return {
    proc,
    memory: () => {
      const answer = nextMessage(proc, "memory");
      proc.send("memory");
      return answer;
    },
    run: (name, ...args) => {
      const done = nextMessage(proc, "done");
      proc.send({ run: { name, args } });
      return done;
    },
    close: () => {
      closing = true;
      return new Promise((resolve) => (proc.once("exit", resolve), proc.send("close")));
    },
  };
}

const heapOf = (usage) => usage.heapUsed + usage.arrayBuffers;
/** The peak of one window, from the report that opened it and the one that closed it (see the header). */
const windowPeak = (opened, closed) => ({
  rss: closed.maxRSS > opened.maxRSS ? closed.maxRSS : closed.peak.rss,
  heap: closed.peak.heap,
});

/**
 * One fresh server and client: `warmup` then `main` run in the client, and
 * `onMark(mark, { close, go })` handles the client's marks. With `probeMs`,
 * a window also closes that often. Returns the moved sizes and per side the
 * baseline, every window, the overall peak and the largest live set.
 */
async function measure(warmup, main, onMark = async () => {}, probeMs = 0) {
  const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-memory-"));
  const server = child("./peer.mjs", ["server", dataDir]);
  const client = child("./memory.mjs", ["client"]);
  try {
    const [url] = await Promise.all([nextMessage(server.proc, "url"), nextMessage(client.proc, "ready")]);
    await client.run(warmup[0], url, ...warmup.slice(1));
    const both = () => Promise.all([client.memory(), server.memory()]);
    const base = await both();
    const started = Date.now();
    const windows = [];
    let opened = base;
    // Windows close one at a time: two requests in flight would both take the first answer.
    let closing = Promise.resolve();
    const close = (label) =>
      (closing = closing.then(async () => {
        const closed = await both();
        windows.push({ label, client: windowPeak(opened[0], closed[0]), server: windowPeak(opened[1], closed[1]), at: closed });
        opened = closed;
        if (process.env.MEMORY_DEBUG) {
          const live = (i) =>
            `${mib(heapOf(closed[i].now) - heapOf(base[i].now))} (heap ${mib(closed[i].now.heapUsed - base[i].now.heapUsed)}, ` +
            `buffers ${mib(closed[i].now.arrayBuffers - base[i].now.arrayBuffers)})`;
          console.log(`  ${((Date.now() - started) / 1000).toFixed(2)} s ${label}: live heap+buf client ${live(0)}, server ${live(1)}`);
        }
      }));
    client.proc.on("message", (message) => {
      if (typeof message === "object" && message !== null && "mark" in message) {
        void onMark(message.mark, { close, go: () => client.proc.send({ go: true }) });
      }
    });
    const probe = probeMs > 0 ? setInterval(() => void close("probe"), probeMs) : undefined;
    const moved = await client.run(main[0], url, ...main.slice(1));
    clearInterval(probe);
    await close("end");
    const over = (i, side, of) => ({
      rss: Math.max(...windows.map((w) => of(w, i, side).rss)),
      heap: Math.max(...windows.map((w) => of(w, i, side).heap)),
    });
    const peakOf = (w, _i, side) => w[side];
    // A live set is measured when a window closes, after a full GC.
    const liveOf = (w, i) => ({ rss: w.at[i].now.rss, heap: heapOf(w.at[i].now) });
    return {
      moved,
      base: { client: base[0].now, server: base[1].now },
      windows,
      peak: { client: over(0, "client", peakOf), server: over(1, "server", peakOf) },
      live: { client: over(0, "client", liveOf), server: over(1, "server", liveOf) },
    };
  } finally {
    await Promise.all([client.close(), server.close()]);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const mib = (bytes) => `${(bytes / MIB).toFixed(1)} MiB`;
/** Growth of `run`'s `what` (peak or live) over its baseline, for one side. */
const growth = (run, side, what = "peak") => ({
  rss: run[what][side].rss - run.base[side].rss,
  heap: run[what][side].heap - heapOf(run.base[side]),
});

async function parentMain() {
  const only = process.env.MEMORY_ONLY?.split(",");
  const want = (name) => only === undefined || only.includes(name);
  const rows = [];
  const ratios = [];
  const started = Date.now();

  const moved = ({ bytes, items }) => (bytes > 0 ? `${mib(bytes)} (${items} items)` : `${items} items`);
  const row = (scenario, run, bound) => {
    const [c, s] = [growth(run, "client"), growth(run, "server")];
    rows.push([scenario, moved(run.moved), mib(c.rss), mib(c.heap), mib(s.rss), mib(s.heap), bound]);
  };
  const liveRow = (run) => {
    const [c, s] = [growth(run, "client", "live"), growth(run, "server", "live")];
    rows.push([
      `    live (after a full GC, every ${LIVE_PROBE_MS} ms)`,
      "",
      "",
      mib(c.heap),
      "",
      mib(s.heap),
      "what is held, garbage excluded",
    ]);
  };
  const ratio = (label, small, big, what) => {
    const r = (side, part) => (growth(big, side, what)[part] / growth(small, side, what)[part]).toFixed(2);
    ratios.push(
      what === "peak"
        ? `${label.padEnd(36)} peak: client RSS ${r("client", "rss")}, heap+buf ${r("client", "heap")}; server RSS ${r("server", "rss")}, heap+buf ${r("server", "heap")}`
        : `${label.padEnd(36)} live: client heap+buf ${r("client", "heap")}; server heap+buf ${r("server", "heap")}`,
    );
  };
  /** Runs a scenario twice, for its peaks and for its live set; prints both rows. */
  const peakAndLive = async (label, warmup, main, bound) => {
    const peakRun = await measure(warmup, main);
    row(label, peakRun, bound);
    const liveRun = await measure(warmup, main, undefined, LIVE_PROBE_MS);
    liveRow(liveRun);
    return { peakRun, liveRun };
  };
  const compare = (label, small, big) => {
    ratio(label, small.peakRun, big.peakRun, "peak");
    ratio(label, small.liveRun, big.liveRun, "live");
  };

  if (want("upload")) {
    const bound = "client: 8 MiB unacked + 1 chunk; server: 64 MiB permits, 16 inbound msgs";
    const small = await peakAndLive(`1 upload: digest ${SMALL_MIB} MiB`, ["digest", 4], ["digest", SMALL_MIB], bound);
    const big = await peakAndLive(`1 upload: digest ${BIG_MIB} MiB`, ["digest", 4], ["digest", BIG_MIB], bound);
    compare(`upload ${BIG_MIB} / ${SMALL_MIB} MiB`, small, big);
  }

  const blobWarmup = ["blobs", 4, MIB, 0, 0];
  if (want("slow")) {
    const bound = "client: 64 MiB queued; server: 1 MiB read + 1 MiB socket + 8 MiB uncommitted";
    const label = (n) => `2 slow: blobs ${n} x 1 MiB, ${DELAY_MS} ms each`;
    const small = await peakAndLive(label(SMALL_MIB), blobWarmup, ["blobs", SMALL_MIB, MIB, DELAY_MS, 0], bound);
    const big = await peakAndLive(label(BIG_MIB), blobWarmup, ["blobs", BIG_MIB, MIB, DELAY_MS, 0], bound);
    compare(`slow consumer ${BIG_MIB} / ${SMALL_MIB} MiB`, small, big);
  }

  if (want("stall")) {
    const run = await measure(blobWarmup, ["blobs", BIG_MIB, MIB, DELAY_MS, Math.ceil(BIG_MIB / 2)], async (_mark, { close, go }) => {
      await close("before stall");
      await sleep(1000);
      await close("stall");
      go();
    });
    row(`2 stall: the same, 1 s unread halfway`, run, "as above");
    const stall = run.windows.find((w) => w.label === "stall");
    const start = run.windows.find((w) => w.label === "before stall").at;
    const during = (side, i) => ({ rss: stall[side].rss - start[i].now.rss, heap: stall[side].heap - heapOf(start[i].now) });
    const [c, s] = [during("client", 0), during("server", 1)];
    rows.push(["    during the 1 s stall", "", mib(c.rss), mib(c.heap), mib(s.rss), mib(s.heap), "growth while nothing is read: none"]);
  }

  if (want("large")) {
    const size = LARGE_ITEM_MIB * MIB;
    const count = Math.max(4, BIG_MIB / LARGE_ITEM_MIB);
    const delay = DELAY_MS * LARGE_ITEM_MIB;
    await peakAndLive(
      `2 large: blobs ${count} x ${LARGE_ITEM_MIB} MiB, ${delay} ms each`,
      ["blobs", 2, size, 0, 0],
      ["blobs", count, size, delay, 0],
      "client: 64 MiB queued + 1 item; server: a few items",
    );
  }

  if (want("sessions")) {
    const counts = [Math.max(1, Math.round(SESSIONS / 4)), SESSIONS];
    const runs = [];
    for (const n of counts) {
      const run = await measure(["sessions", 2, false], ["sessions", n, true], async (_mark, { close, go }) => {
        await close("all live");
        go();
      });
      runs.push(run);
      // The peak up to the moment all N are live, over the idle baseline.
      const atLive = run.windows.find((w) => w.label === "all live");
      const per = (side) => `${((atLive[side].rss - run.base[side].rss) / n / 1024).toFixed(0)} KiB`;
      row(`3 sessions: ${n} concurrent count`, run, `RSS when all live / N: client ${per("client")}, server ${per("server")}`);
    }
    const atLive = (run, side) => {
      const w = run.windows.find((w) => w.label === "all live")[side];
      return { rss: w.rss - run.base[side].rss, heap: w.heap - heapOf(run.base[side]) };
    };
    const slope = (side, part) =>
      `${((atLive(runs[1], side)[part] - atLive(runs[0], side)[part]) / (counts[1] - counts[0]) / 1024).toFixed(0)} KiB`;
    ratios.push(
      `${`per live session, ${counts[0]} → ${counts[1]}`.padEnd(36)} client RSS ${slope("client", "rss")}, heap+buf ${slope("client", "heap")}; ` +
        `server RSS ${slope("server", "rss")}, heap+buf ${slope("server", "heap")}`,
    );
  }

  console.log(
    `node ${process.version}, ${availableParallelism()} cores, loopback; client and server each in a fresh forked process per run; ` +
      `growth over the idle baseline after a warm-up and a full GC: peak RSS (maxRSS or 20 ms samples), ` +
      `peak heap+buf = heapUsed + arrayBuffers (20 ms samples); ${((Date.now() - started) / 1000).toFixed(0)} s`,
  );
  const header = ["scenario", "moved", "client RSS", "client heap+buf", "server RSS", "server heap+buf", "bound"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells) =>
    cells
      .map((cell, i) => (i >= 2 && i <= 5 ? cell.padStart(widths[i]) : cell.padEnd(widths[i])))
      .join("  ")
      .trimEnd();
  console.log(line(header));
  for (const r of rows) console.log(line(r));
  if (ratios.length > 0) console.log("growth of the big run / the small run (bounded: about 1.0), and memory per live session:");
  for (const r of ratios) console.log(`  ${r}`);
}

if (process.argv[2] === "client") await clientMain();
else await parentMain();

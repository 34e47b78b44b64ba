#!/usr/bin/env node
/**
 * `golem-stream invoke echo digest -` of a file on stdin, against a raw `ws`
 * pipe doing the same work (target >= 0.5x, docs/performance.md), in alternating rounds.
 *
 *   node bench/digest-pipe.mjs                 # 256 MiB, 5 rounds (build first)
 *   BENCH_MIB=64 BENCH_ROUNDS=3 node bench/digest-pipe.mjs
 *   BENCH_CLI_BEFORE=<other build>/dist/golem-stream.js node bench/digest-pipe.mjs   # adds that build as a row
 *                                              # (dist/bin.js for a build before the bundled executable):
 *                                              # its CLI against its own `serve`, alternating with this build
 *   BENCH_SERVE_DIR=/dev/shm node bench/digest-pipe.mjs   # the server's data (and the disk row) there: tmpfs takes the disk out
 *
 * Both rows are process to process, started fresh per round, reading the same
 * file of random bytes from stdin:
 *   raw ws pipe — `node digest-pipe.mjs send <url>` reads stdin (a file 1 MiB at
 *                 a time), joins chunks into messages of up to 1 MiB (as the CLI
 *                 does) and sends them
 *                 over a bare `ws` socket to `digest-pipe.mjs sink`, which
 *                 SHA-256s them (no durability) and replies with the hex
 *                 digest once the sender says "end";
 *   CLI         — `golem-stream invoke echo digest -` against `golem-stream
 *                 serve` (SQLite, synchronous = FULL, payload files synced
 *                 before their ACK), which prints the digest.
 * Both digests are checked against the file's. The ratio is the median over
 * the rounds of each round's raw time over the CLI time in the same round.
 *
 * CPU per MiB of each process (medians over the rounds): the sending process
 * reports its own `process.cpuUsage()` at exit (a `--require`d hook), the
 * receiving one (sink, serve) is read from /proc/<pid>/stat before and after
 * (Linux only; 10 ms ticks). With two cores, a row cannot take less wall time
 * than max(sender, receiver, (sender + receiver) / 2): the bench prints that
 * floor beside each row, so what bounds a row shows in the numbers.
 */
import { fork, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { closeSync, createReadStream, existsSync, fstatSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const MIB = 1024 * 1024;
/** `node -e` body of the disk row: stdin appended to a file 1 MiB at a time, each synced; prints the file's SHA-256. */
const DISK_APPEND = `
const fs = require("node:fs"), { createHash } = require("node:crypto");
const [file] = process.argv.slice(1);
const fd = fs.openSync(file, "w"), hash = createHash("sha256"), buffer = Buffer.allocUnsafe(1 << 20);
for (let n; (n = fs.readSync(0, buffer, 0, buffer.length, null)) > 0; ) {
  fs.writeSync(fd, buffer, 0, n);
  fs.fdatasyncSync(fd);
  hash.update(buffer.subarray(0, n));
}
fs.closeSync(fd);
fs.rmSync(file);
process.stdout.write(hash.digest("hex") + "\\n");
`;
/** `--require`d by every sending process: writes its CPU time (user + system, µs) to fd 3 at exit. */
const CPU_AT_EXIT = `process.on("exit", () => { try { const u = process.cpuUsage(); require("node:fs").writeSync(3, String(u.user + u.system)); } catch {} });\n`;
/** A process's CPU time so far (µs, all threads) from /proc; undefined where there is none. */
function procCpuMicros(pid) {
  const file = `/proc/${pid}/stat`;
  if (!existsSync(file)) return undefined;
  const fields = readFileSync(file, "utf8").split(") ")[1].split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100; // utime + stime, in USER_HZ (100) ticks
}
const SELF = fileURLToPath(import.meta.url);
const require = createRequire(createRequire(import.meta.resolve("@golem-stream/client")).resolve("ws"));
const { WebSocket, WebSocketServer } = require("ws");
const [mode, url] = process.argv.slice(2);

if (mode === "sink") {
  // Bare ws receiver: hashes every binary message, answers "end" with the digest.
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1", perMessageDeflate: false, maxPayload: 32 * MIB });
  wss.on("connection", (socket) => {
    const hash = createHash("sha256");
    socket.on("message", (data, isBinary) => {
      if (isBinary) hash.update(data);
      else socket.send(hash.digest("hex"));
    });
  });
  wss.once("listening", () => process.send({ url: `ws://127.0.0.1:${wss.address().port}` }));
  process.on("disconnect", () => process.exit(0));
} else if (mode === "send") {
  const socket = new WebSocket(url, { perMessageDeflate: false });
  await new Promise((resolve) => socket.once("open", resolve));
  let parts = [];
  let size = 0;
  const flush = async () => {
    socket.send(parts.length === 1 ? parts[0] : Buffer.concat(parts, size), { binary: true });
    parts = [];
    size = 0;
    if (socket.bufferedAmount > 8 * MIB) await new Promise((resolve) => setImmediate(resolve));
  };
  // Stdin as the CLI reads it for a stream<u8>: a regular file 1 MiB at a time (stdinBytes in src/io/stdin-source.ts).
  const stdin = fstatSync(0).isFile() ? createReadStream("", { fd: 0, highWaterMark: MIB, autoClose: false }) : process.stdin;
  for await (const chunk of stdin) {
    parts.push(chunk);
    size += chunk.length;
    if (size >= MIB || stdin.readableLength === 0) await flush();
  }
  if (size > 0) await flush();
  const digest = new Promise((resolve) => socket.once("message", (data) => resolve(String(data))));
  socket.send("end");
  process.stdout.write(`${await digest}\n`);
  socket.close();
} else {
  await main();
}

/** Whether the `ws` the client (and so the CLI) resolves loads the optional native `bufferutil`. */
function bufferutilStatus() {
  if (process.env.WS_NO_BUFFER_UTIL) return "disabled (WS_NO_BUFFER_UTIL)";
  try {
    require("bufferutil");
    return "loaded (native frame masking)";
  } catch (error) {
    return `not loaded (${error.code ?? error.message}): ws masks frames in JavaScript`;
  }
}

async function main() {
  const mib = Number(process.env.BENCH_MIB ?? 256);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
  const BIN = fileURLToPath(new URL("../dist/golem-stream.js", import.meta.url));
  const dir = mkdtempSync(join(tmpdir(), "golem-stream-bench-digest-"));
  const file = join(dir, "data.bin");
  const data = randomBytes(mib * MIB);
  writeFileSync(file, data);
  const expected = createHash("sha256").update(data).digest("hex");
  const token = "bench-token";

  const cpuHook = join(dir, "cpu-at-exit.cjs");
  writeFileSync(cpuHook, CPU_AT_EXIT);
  const sink = fork(SELF, ["sink"], { stdio: "inherit" });
  const sinkUrl = await new Promise((resolve) => sink.once("message", (m) => resolve(m.url)));
  // Where the server keeps its data and the disk row appends (BENCH_SERVE_DIR: e.g. a tmpfs, to compare CPU without the disk).
  const serveRoot = process.env.BENCH_SERVE_DIR ? mkdtempSync(join(process.env.BENCH_SERVE_DIR, "golem-stream-bench-serve-")) : dir;
  /** `<bin> serve` with its data in `<serveRoot>/<name>`; resolves once it listens. */
  const startServe = (bin, name) => {
    const child = spawn(process.execPath, [
      bin,
      "serve",
      "--port",
      "0",
      "--token",
      token,
      "--data-dir",
      join(serveRoot, name),
      "--log-level",
      "error",
    ]);
    return new Promise((resolve) => {
      let text = "";
      child.stdout.on("data", (chunk) => {
        text += chunk;
        const match = /^listening on (\S+)$/m.exec(text);
        if (match) resolve({ child, url: match[1] });
      });
    });
  };
  const before = process.env.BENCH_CLI_BEFORE;
  const servers = {
    cli: await startServe(BIN, "data"),
    ...(before === undefined ? {} : { before: await startServe(before, "data-before") }),
  };

  /**
   * Runs `args` with the file as stdin while `receiver` (a pid) serves it; resolves with
   * [seconds, stdout, cpu], cpu = { sender, receiver } in µs (receiver undefined without /proc).
   */
  const run = (args, receiver, serverUrl = servers.cli.url) =>
    new Promise((resolve, reject) => {
      const stdin = openSync(file, "r");
      const receiverBefore = procCpuMicros(receiver);
      const start = process.hrtime.bigint();
      const child = spawn(process.execPath, ["--require", cpuHook, ...args], {
        stdio: [stdin, "pipe", "inherit", "pipe"],
        env: { ...process.env, GOLEM_STREAM_TOKEN: token, GOLEM_STREAM_URL: serverUrl },
      });
      closeSync(stdin);
      const out = [];
      let senderCpu = "";
      child.stdout.on("data", (c) => out.push(c));
      child.stdio[3].on("data", (c) => (senderCpu += c));
      child.on("close", (code) => {
        const seconds = Number(process.hrtime.bigint() - start) / 1e9;
        const receiverAfter = procCpuMicros(receiver);
        const cpu = { sender: Number(senderCpu), receiver: receiverBefore === undefined ? undefined : receiverAfter - receiverBefore };
        if (code === 0) resolve([seconds, Buffer.concat(out).toString(), cpu]);
        else reject(new Error(`${args.join(" ")} exited ${code}`));
      });
    });
  const invoke = (bin, server) => () => run([bin, "invoke", "echo", "digest", "-c", '{"name":"bench"}', "-"], server.child.pid, server.url);
  const rows = {
    raw: () => run([SELF, "send", sinkUrl], sink.pid),
    // The disk's own ceiling for the durable path: the file appended 1 MiB at a time, each synced
    // (the server syncs several batches per group, so it can beat this row when the disk is slow).
    disk: () => run(["-e", DISK_APPEND, join(serveRoot, "disk.bin")]),
    cli: invoke(BIN, servers.cli),
    ...(before === undefined ? {} : { before: invoke(before, servers.before) }),
  };
  const seconds = Object.fromEntries(Object.keys(rows).map((name) => [name, []]));
  const cpus = Object.fromEntries(Object.keys(rows).map((name) => [name, []]));
  try {
    // Odd rounds run the rows in reverse order: a row that follows a durable one meets the disk
    // still flushing (or in its slow phase) and would otherwise always pay for it.
    for (let round = -1; round < rounds; round++)
      for (const [name, row] of round % 2 === 0 ? Object.entries(rows) : Object.entries(rows).reverse()) {
        const [s, out, cpu] = await row();
        if (!out.includes(expected)) throw new Error(`${name}: digest missing from output: ${out.slice(0, 200)}`);
        if (round >= 0) {
          // round -1 warms the page cache and the server
          seconds[name].push(s);
          cpus[name].push(cpu);
        }
      }
  } finally {
    for (const server of Object.values(servers)) server.child.kill("SIGTERM");
    sink.kill("SIGTERM");
  }
  rmSync(dir, { recursive: true, force: true });
  rmSync(serveRoot, { recursive: true, force: true });

  const median = (values) => {
    const sorted = [...values].sort((a, b) => a - b);
    const m = sorted.length >> 1;
    return sorted.length % 2 ? sorted[m] : (sorted[m - 1] + sorted[m]) / 2;
  };
  const ratiosOf = (name) => seconds[name].map((s, i) => seconds.raw[i] / s);
  const ratios = ratiosOf("cli");
  console.log(
    `node ${process.version}, bufferutil ${bufferutilStatus()}; ${mib} MiB of random bytes on stdin, ` +
      `fresh processes per round, medians of ${rounds} alternating rounds`,
  );
  console.log(`  raw ws pipe, SHA-256 at the sink              ${(mib / median(seconds.raw)).toFixed(0).padStart(6)} MiB/s`);
  console.log(
    `  golem-stream invoke echo digest -             ${(mib / median(seconds.cli)).toFixed(0).padStart(6)} MiB/s  ` +
      `${median(ratios).toFixed(2)}x raw (rounds ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}), target >= 0.5x: ${median(ratios) >= 0.5 ? "met" : "NOT met"}`,
  );
  const diskRatios = ratiosOf("disk");
  console.log(
    `  disk: 1 MiB appends, each fdatasync'ed        ${(mib / median(seconds.disk)).toFixed(0).padStart(6)} MiB/s  ${median(diskRatios).toFixed(2)}x raw (rounds ${Math.min(...diskRatios).toFixed(2)}–${Math.max(...diskRatios).toFixed(2)})`,
  );
  if (before !== undefined) {
    const beforeRatios = ratiosOf("before");
    const speedups = seconds.before.map((s, i) => s / seconds.cli[i]);
    console.log(
      `  BENCH_CLI_BEFORE                              ${(mib / median(seconds.before)).toFixed(0).padStart(6)} MiB/s  ${median(beforeRatios).toFixed(2)}x raw (rounds ${Math.min(...beforeRatios).toFixed(2)}–${Math.max(...beforeRatios).toFixed(2)}); ` +
        `this build ${median(speedups).toFixed(2)}x of it (rounds ${Math.min(...speedups).toFixed(2)}–${Math.max(...speedups).toFixed(2)})`,
    );
  }
  // CPU per MiB of each process, and the wall-time floor two cores put under each row.
  const perMib = (name, side) =>
    cpus[name].every((c) => c[side] !== undefined) ? median(cpus[name].map((c) => c[side])) / 1000 / mib : undefined;
  const ms = (value) => (value === undefined ? "n/a" : `${value.toFixed(2)} ms`);
  console.log("CPU per MiB (medians), sender + receiver; the 2-core floor is max(each, sum / 2), as a rate:");
  for (const [name, label] of [
    ["raw", "raw ws: send + sink"],
    ["cli", "CLI: invoke + serve"],
    ["before", "BENCH_CLI_BEFORE: invoke + serve"],
  ]) {
    if (cpus[name] === undefined) continue;
    const [sender, receiver] = [perMib(name, "sender"), perMib(name, "receiver")];
    const floor = receiver === undefined ? undefined : Math.max(sender, receiver, (sender + receiver) / 2);
    console.log(
      `  ${label.padEnd(36)} ${ms(sender)} + ${ms(receiver)}${floor === undefined ? "" : ` = ${ms(sender + receiver)}; floor ${(1000 / floor).toFixed(0)} MiB/s`}`,
    );
  }
  if (process.env.BENCH_DEBUG) console.log(JSON.stringify({ seconds, cpus }));
}

// Benchmarks of @golem-stream/cli against dist/ (build first: npx tsc -p tsconfig.json).
// Every figure is a ratio to a baseline measured side by side in the same run,
// so the numbers compare across machines. Usage: node bench/run.mjs [--quick]
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { decodeCheckpoint, encodeCheckpoint, writeCheckpointFile } from "../dist/index.js";
import { createRequire } from "node:module";
import { textLines } from "../dist/io/stdin-source.js";

/**
 * Whether `ws` (as @golem-stream/client, which the CLI connects with, resolves it) loads the optional native `bufferutil`,
 * which masks and unmasks frames in C instead of JavaScript.
 */
function bufferutilStatus() {
  if (process.env.WS_NO_BUFFER_UTIL) return "disabled (WS_NO_BUFFER_UTIL)";
  try {
    createRequire(createRequire(import.meta.resolve("@golem-stream/client")).resolve("ws"))("bufferutil");
    return "loaded (native frame masking)";
  } catch (error) {
    return `not loaded (${error.code ?? error.message}): ws masks frames in JavaScript`;
  }
}

const quick = process.argv.includes("--quick");

async function time(fn, rounds) {
  await fn(); // warm up
  const start = performance.now();
  for (let i = 0; i < rounds; i++) await fn();
  return (performance.now() - start) / rounds;
}

function row(name, ms, baselineMs, unit) {
  console.log(`${name.padEnd(44)} ${ms.toFixed(3).padStart(10)} ms  ${unit.padEnd(22)} x${(ms / baselineMs).toFixed(2)} of baseline`);
}

// 1. stdin -> stream<string> items: textLines vs toString().split("\n").
{
  const line = "the quick brown fox jumps over the lazy dog — ünïcödé 😀\n";
  const total = quick ? 4 << 20 : 32 << 20;
  const text = Buffer.from(line.repeat(Math.ceil(total / Buffer.byteLength(line))));
  const chunks = [];
  for (let i = 0; i < text.length; i += 64 * 1024) chunks.push(text.subarray(i, i + 64 * 1024));
  const baseline = await time(async () => {
    let n = 0;
    for (const l of Buffer.concat(chunks).toString("utf8").split("\n")) n += l.length;
    return n;
  }, 3);
  const ours = await time(async () => {
    let n = 0;
    for await (const l of textLines(Readable.from(chunks), () => undefined)) n += l.length;
    return n;
  }, 3);
  console.log(`stdin lines, ${(text.length / 1048576).toFixed(0)} MiB in 64 KiB chunks`);
  row("  baseline: toString + split", baseline, baseline, `${(text.length / 1048576 / (baseline / 1000)).toFixed(0)} MiB/s`);
  row("  textLines (streaming, strict UTF-8)", ours, baseline, `${(text.length / 1048576 / (ours / 1000)).toFixed(0)} MiB/s`);
}

// 2. Checkpoint codec: decode/encode vs plain JSON.parse/stringify of the same text.
{
  const token = (c) => `gai1_${c.repeat(300)}`;
  const checkpoint = {
    selector: {
      agentType: "echo",
      application: "demo",
      environment: "default",
      method: "split",
      constructorParameters: { kind: "record", value: { fields: [{ kind: "string", value: "me" }] } },
    },
    idempotencyKey: "run-1",
    sessionToken: token("S"),
    outputCursors: Array.from({ length: 16 }, (_, i) => token(String.fromCharCode(97 + i))),
    methodSchemaDigest: "0".repeat(64),
  };
  const text = encodeCheckpoint(checkpoint);
  const rounds = quick ? 500 : 5000;
  const parse = await time(() => JSON.parse(text), rounds);
  const decode = await time(() => decodeCheckpoint(text), rounds);
  const stringify = await time(() => JSON.stringify(checkpoint), rounds);
  const encode = await time(() => encodeCheckpoint(checkpoint), rounds);
  console.log(`checkpoint codec, ${text.length} bytes, 16 output streams`);
  row("  baseline: JSON.parse", parse, parse, "per document");
  row("  decodeCheckpoint (strict, validated)", decode, parse, "per document");
  row("  baseline: JSON.stringify", stringify, stringify, "per document");
  row("  encodeCheckpoint (canonical + self-check)", encode, stringify, "per document");

  // 3. Durable replacement: what one delivered output event costs with --checkpoint.
  const dir = mkdtempSync(join(tmpdir(), "golem-stream-bench-"));
  const path = join(dir, "run.ckpt");
  writeFileSync(path, text);
  const writes = quick ? 20 : 200;
  const plain = await time(() => writeFile(join(dir, "plain.json"), text), writes);
  const atomic = await time(() => writeCheckpointFile(path, checkpoint), writes);
  console.log("checkpoint write per delivered output event");
  row("  baseline: fs.writeFile (no fsync, not atomic)", plain, plain, "per write");
  row("  writeCheckpointFile (tmp+fsync+rename+fsync)", atomic, plain, `${(1000 / atomic).toFixed(0)} events/s max`);
}

// 4. End to end through the real CLI against a local `golem-stream serve` (child processes).
{
  const BIN = fileURLToPath(new URL("../dist/golem-stream.js", import.meta.url));
  const dir = mkdtempSync(join(tmpdir(), "golem-stream-bench-e2e-"));
  const token = "bench-token";
  const exec = (args, stdin) =>
    new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, GOLEM_STREAM_TOKEN: token, GOLEM_STREAM_URL: url } });
      const out = [];
      child.stdout.on("data", (c) => out.push(c));
      child.stderr.on("data", () => {});
      child.on("close", (code) => (code === 0 ? resolve(Buffer.concat(out)) : reject(new Error(`${args.join(" ")} exited ${code}`))));
      child.stdin.end(stdin);
    });
  const server = spawn(process.execPath, [
    BIN,
    "serve",
    "--port",
    "0",
    "--token",
    token,
    "--data-dir",
    join(dir, "data"),
    "--log-level",
    "error",
  ]);
  let url = "";
  await new Promise((resolve) => {
    let text = "";
    server.stdout.on("data", (chunk) => {
      text += chunk;
      const match = /^listening on (\S+)$/m.exec(text);
      if (match) {
        url = match[1];
        resolve();
      }
    });
  });
  try {
    const size = quick ? 16 << 20 : 64 << 20;
    const data = randomBytes(size);
    const local = await time(async () => createHash("sha256").update(data).digest("hex"), 1);
    const viaCli = await time(() => exec(["invoke", "echo", "digest", "-c", '{"name":"bench"}', "-"], data), 1);
    const startup = await time(() => exec(["--version"]), 3);
    console.log(
      `digest of ${size >> 20} MiB through invoke (process start, discovery, WebSocket, server); bufferutil ${bufferutilStatus()}`,
    );
    row("  baseline: sha256 in this process", local, local, `${(size / 1048576 / (local / 1000)).toFixed(0)} MiB/s`);
    row("  golem-stream invoke echo digest - < data", viaCli, local, `${(size / 1048576 / (viaCli / 1000)).toFixed(0)} MiB/s`);
    row("  (golem-stream --version: process start)", startup, local, "per process");

    const items = quick ? 200 : 1000;
    const plain = await time(() => exec(["invoke", "echo", "count", "-c", '{"name":"bench"}', String(items), "0"]), 1);
    // A fresh file per run: invoke refuses to overwrite a checkpoint (it may be the only way back).
    let run = 0;
    const checkpointed = await time(
      () =>
        exec(["invoke", "echo", "count", "-c", '{"name":"bench"}', String(items), "0", "--checkpoint", join(dir, `count-${run++}.ckpt`)]),
      1,
    );
    // The write per item of earlier versions: what the batching saves.
    const everyItem = await time(
      () =>
        exec([
          "invoke",
          "echo",
          "count",
          "-c",
          '{"name":"bench"}',
          String(items),
          "0",
          "--checkpoint",
          join(dir, `count-${run++}.ckpt`),
          "--checkpoint-interval",
          "0",
        ]),
      1,
    );
    console.log(`count ${items} items (one durable server event each), with and without --checkpoint`);
    row("  baseline: invoke echo count", plain, plain, `${(items / (plain / 1000)).toFixed(0)} items/s`);
    row("  invoke echo count --checkpoint (batched)", checkpointed, plain, `${(items / (checkpointed / 1000)).toFixed(0)} items/s`);
    row("  ... --checkpoint-interval 0 (every item)", everyItem, plain, `${(items / (everyItem / 1000)).toFixed(0)} items/s`);
  } finally {
    server.kill("SIGTERM");
  }
}

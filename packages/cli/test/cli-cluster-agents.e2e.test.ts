/**
 * `golem-stream serve --agents` as cluster nodes: two `serve --store
 * postgres://… --agents <module>` processes on one throwaway PostgreSQL and
 * one keyring serve the module's agents as they serve the demo. An
 * invocation of a user's agent type started at node A, its CLI killed
 * mid-stream, is resumed at node B with every item; both nodes list the
 * same catalogue. A node whose module declares another catalogue is refused
 * (exit 78), or with `--allow-catalogue-drift` serves and says so in its
 * log and `/readyz`; a rolling upgrade of the module, node by node behind a
 * balancer under load, loses no item of any invocation.
 *
 * PostgreSQL that cannot start fails every test here with the reason: these
 * tests never skip.
 */
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startLocalPostgres, type LocalPostgres } from "@golem-stream/store-postgres/local";
import { startBalancer } from "../examples/round-robin-balancer.mjs";
import { EXIT } from "../src/exit-codes.js";
import { itemsOf, postgresParentDir, run, scratchDir, start, startServe, TOKEN, waitFor, type ServerProcess } from "./support/processes.js";

const MODULE = "test/fixtures/agents/two-apps.js";
/** The same module with one method more: another catalogue. */
const MODULE_V2 = "test/fixtures/agents/two-apps-v2.js";

let postgres: LocalPostgres | undefined;
let startFailure: unknown;
const nodes: ServerProcess[] = [];

beforeAll(async () => {
  try {
    postgres = await startLocalPostgres({ database: "cli_cluster_agents", parentDir: postgresParentDir() });
  } catch (error) {
    startFailure = error;
  }
}, 60_000);
afterAll(async () => {
  await Promise.all(nodes.filter((node) => node.running.child.exitCode === null).map((node) => node.stop()));
  await postgres?.stop();
});

const nodeArgs = (store: string, keyring: string, nodeId: string, module = MODULE, port = 0) => [
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
  "--agents",
  module,
  "--log-level",
  "warn",
];

async function node(
  store: string,
  keyring: string,
  nodeId: string,
  module = MODULE,
  extra: readonly string[] = [],
  port = 0,
): Promise<ServerProcess> {
  const server = await startServe([...nodeArgs(store, keyring, nodeId, module, port), ...extra]);
  nodes.push(server);
  return server;
}

async function freshStore(name: string): Promise<string> {
  if (postgres === undefined)
    throw new Error(`PostgreSQL could not start: ${startFailure instanceof Error ? startFailure.message : String(startFailure)}`);
  return postgres.createDatabase(name);
}

it("two nodes with the same module: an invocation of its agent type started at A and cut mid-stream is resumed at B with every item", async () => {
  const store = await freshStore("agents_1");
  const keyring = join(scratchDir(), "keyring.json");
  const a = await node(store, keyring, "node-a");
  const b = await node(store, keyring, "node-b");
  for (const server of [a, b]) {
    expect(server.running.stdout().toString()).toContain(`agents of ${MODULE}: application text, environment default: words`);
    const types = await run(["types", "-a", "math", "-e", "prod"], { env: server.env });
    expect(types.stdout.toString()).toContain("add(a: u32, b: u32) -> u32");
  }

  const checkpoint = join(scratchDir(), "repeat.ckpt");
  const args = [
    "invoke",
    "words",
    "repeat",
    "-a",
    "text",
    "-c",
    '{"language":"en"}',
    "w",
    "30",
    "50",
    "--output",
    "lines",
    "--checkpoint",
    checkpoint,
    "--checkpoint-interval",
    "0",
  ];
  const invoked = start(args, { env: a.env });
  await waitFor(invoked, () => itemsOf(invoked.stdout(), "$").length >= 5, "five items arrived from node A");
  invoked.child.kill("SIGKILL");
  const before = itemsOf((await invoked.done).stdout, "$");
  expect(before.length).toBeLessThan(30);

  const resumed = await run(["resume", checkpoint, "--output", "lines"], { env: b.env });
  expect(resumed.stderr).toBe("");
  expect(resumed.code).toBe(EXIT.success);
  const after = itemsOf(resumed.stdout, "$");
  expect([...new Set([...before, ...after])]).toEqual(Array.from({ length: 30 }, (_, i) => `w-${i}`));
}, 60_000);

it("a node whose module declares another catalogue is refused with one line and exit 78; with --allow-catalogue-drift it serves and says so", async () => {
  const store = await freshStore("agents_2");
  const keyring = join(scratchDir(), "keyring.json");
  const a = await node(store, keyring, "node-a");
  const fingerprint = /^catalogue ([0-9a-f]{12}) \(every node of the cluster must serve the same\)$/m.exec(
    a.running.stdout().toString(),
  )?.[1];
  expect(fingerprint).toBeDefined();

  const refused = await run(["serve", ...nodeArgs(store, keyring, "node-b", MODULE_V2)]);
  expect(refused.code).toBe(EXIT.agentsInvalid);
  expect(refused.stdout.length).toBe(0);
  expect(refused.stderr).toMatch(
    new RegExp(
      `^golem-stream: cannot join the cluster: this node's catalogue \\(fingerprint [0-9a-f]{12}\\) differs from that of node node-a \\(${fingerprint}\\): every node of a cluster must serve the same agent types; .*--allow-catalogue-drift\\)\n$`,
    ),
  );

  const b = await node(store, keyring, "node-b", MODULE_V2, ["--allow-catalogue-drift", "--log-level", "info", "--log-format", "json"]);
  expect(b.running.stdout().toString()).toMatch(
    /^catalogue [0-9a-f]{12} \(other nodes may serve another catalogue: --allow-catalogue-drift\)$/m,
  );
  const ready = (await (await fetch(`${b.url}/readyz`)).json()) as {
    status: string;
    details: { catalogue: { fingerprint: string; differing: { node: string; fingerprint: string }[] } };
  };
  expect(ready.status).toBe("ready");
  expect(ready.details.catalogue.differing.map((node) => [node.node, node.fingerprint.slice(0, 12)])).toEqual([["node-a", fingerprint]]);
  await waitFor(b.running, () => b.running.stderr().includes('"cluster.catalogue-drift"'), "node B logged the drift");
  // The new method is served where the new module runs.
  const twice = await run(["invoke", "adder", "twice", "-a", "math", "-e", "prod", "-c", "{}", "21"], { env: b.env });
  expect(JSON.parse(twice.stdout.toString())).toEqual({ result: 42 });
}, 60_000);

it("a rolling upgrade of the module across two nodes behind a balancer, under load, loses nothing", async () => {
  const store = await freshStore("agents_3");
  const keyring = join(scratchDir(), "keyring.json");
  const a = await node(store, keyring, "node-a");
  const b = await node(store, keyring, "node-b");
  const balancer = await startBalancer([a.url, b.url]);
  try {
    const env = { GOLEM_STREAM_URL: balancer.url, GOLEM_STREAM_TOKEN: TOKEN };
    const calls = Array.from({ length: 6 }, (_, i) =>
      start(["invoke", "words", "repeat", "-a", "text", "-c", '{"language":"en"}', `w${i}`, "40", "50", "--output", "lines"], { env }),
    );
    // Under way on both nodes before the first one goes.
    await Promise.all(calls.map((call, i) => waitFor(call, () => itemsOf(call.stdout(), "$").length >= 3, `call ${i} streamed`)));

    // Node A drains (its invocations finish there, its clients resume at B) and comes back with the new module.
    expect((await a.stop()).code).toBe(EXIT.success);
    const a2 = await node(store, keyring, "node-a", MODULE_V2, ["--allow-catalogue-drift"], a.port);
    // Then node B; the new one finds only the new catalogue live, so it needs no flag.
    expect((await b.stop()).code).toBe(EXIT.success);
    const b2 = await node(store, keyring, "node-b", MODULE_V2, [], b.port);

    const finished = await Promise.all(calls.map((call) => call.done));
    finished.forEach((result, i) => {
      expect(result.code, result.stderr).toBe(EXIT.success);
      expect(itemsOf(result.stdout, "$")).toEqual(Array.from({ length: 40 }, (_, n) => `w${i}-${n}`));
    });
    // Both nodes now serve the new method.
    for (const server of [a2, b2]) {
      const twice = await run(["invoke", "adder", "twice", "-a", "math", "-e", "prod", "-c", "{}", "5"], { env: server.env });
      expect(JSON.parse(twice.stdout.toString())).toEqual({ result: 10 });
    }
  } finally {
    await balancer.close();
  }
}, 120_000);

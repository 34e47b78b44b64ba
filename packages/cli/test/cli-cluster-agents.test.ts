/**
 * `golem-stream serve --agents` as cluster nodes: two `serve --store
 * postgres://… --agents <module>` processes on one throwaway PostgreSQL and
 * one keyring serve the module's agents as they serve the demo. An
 * invocation of a user's agent type started at node A, its CLI killed
 * mid-stream, is resumed at node B with every item; both nodes list the
 * same catalogue. A node whose module declares another catalogue is refused
 * (exit 78), or with `--allow-catalogue-drift` serves and says so in its
 * log and `/readyz`.
 *
 * PostgreSQL that cannot start fails every test here with the reason: these
 * tests never skip.
 */
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startLocalPostgres, type LocalPostgres } from "@golem-stream/store-postgres/local";
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
  await Promise.all(nodes.map((node) => (node.running.child.exitCode === null ? node.stop() : undefined)));
  await postgres?.stop();
});

const nodeArgs = (store: string, keyring: string, nodeId: string, module = MODULE) =>
  ["--port", "0", "--token", TOKEN, "--store", store, "--keyring", keyring, "--node-id", nodeId, "--agents", module, "--log-level", "warn"];

async function node(store: string, keyring: string, nodeId: string, module = MODULE, extra: readonly string[] = []): Promise<ServerProcess> {
  const server = await startServe([...nodeArgs(store, keyring, nodeId, module), ...extra]);
  nodes.push(server);
  return server;
}

async function freshStore(name: string): Promise<string> {
  if (postgres === undefined) throw new Error(`PostgreSQL could not start: ${startFailure instanceof Error ? startFailure.message : String(startFailure)}`);
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
  const args = ["invoke", "words", "repeat", "-a", "text", "-c", '{"language":"en"}', "w", "30", "50", "--output", "lines", "--checkpoint", checkpoint, "--checkpoint-interval", "0"];
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
  const fingerprint = /^catalogue ([0-9a-f]{12}) \(every node of the cluster must serve the same\)$/m.exec(a.running.stdout().toString())?.[1];
  expect(fingerprint).toBeDefined();

  const refused = await run(["serve", ...nodeArgs(store, keyring, "node-b", MODULE_V2)]);
  expect(refused.code).toBe(EXIT.agentsInvalid);
  expect(refused.stdout.length).toBe(0);
  expect(refused.stderr).toMatch(new RegExp(`^golem-stream: cannot join the cluster: this node's catalogue \\(fingerprint [0-9a-f]{12}\\) differs from that of node node-a \\(${fingerprint}\\): every node of a cluster must serve the same agent types; .*--allow-catalogue-drift\\)\n$`));

  const b = await node(store, keyring, "node-b", MODULE_V2, ["--allow-catalogue-drift", "--log-level", "info", "--log-format", "json"]);
  expect(b.running.stdout().toString()).toMatch(/^catalogue [0-9a-f]{12} \(other nodes may serve another catalogue: --allow-catalogue-drift\)$/m);
  const ready = (await (await fetch(`${b.url}/readyz`)).json()) as { status: string; details: { catalogue: { fingerprint: string; differing: { node: string; fingerprint: string }[] } } };
  expect(ready.status).toBe("ready");
  expect(ready.details.catalogue.differing.map((node) => [node.node, node.fingerprint.slice(0, 12)])).toEqual([["node-a", fingerprint]]);
  await waitFor(b.running, () => b.running.stderr().includes('"cluster.catalogue-drift"'), "node B logged the drift");
  // The new method is served where the new module runs.
  const twice = await run(["invoke", "adder", "twice", "-a", "math", "-e", "prod", "-c", "{}", "21"], { env: b.env });
  expect(JSON.parse(twice.stdout.toString())).toEqual({ result: 42 });
}, 60_000);

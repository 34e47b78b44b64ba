/**
 * `golem-stream serve --agents` as cluster nodes: two `serve --store
 * postgres://… --agents <module>` processes on one throwaway PostgreSQL and
 * one keyring serve the module's agents as they serve the demo. An
 * invocation of a user's agent type started at node A, its CLI killed
 * mid-stream, is resumed at node B with every item; both nodes list the
 * same catalogue.
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

async function node(store: string, keyring: string, nodeId: string): Promise<ServerProcess> {
  const server = await startServe(["--port", "0", "--token", TOKEN, "--store", store, "--keyring", keyring, "--node-id", nodeId, "--agents", MODULE, "--log-level", "warn"]);
  nodes.push(server);
  return server;
}

it("two nodes with the same module: an invocation of its agent type started at A and cut mid-stream is resumed at B with every item", async () => {
  if (postgres === undefined) throw new Error(`PostgreSQL could not start: ${startFailure instanceof Error ? startFailure.message : String(startFailure)}`);
  const store = await postgres.createDatabase("agents_1");
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

/**
 * A catalogue past the CLI's default bound of 8 MiB, served by a real `serve --agents` process:
 * 40 000 agent types, about 9.3 MiB of discovery response. A server serves catalogues of any size,
 * so `types` and `invoke` refuse it by default with a message that names `--max-catalogue-bytes`,
 * and read it with that flag.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { run, scratchDir, startServeAgents, type ServerProcess } from "./support/processes.js";

const TYPES = 40_000;

/**
 * Generated here rather than kept as a fixture: a module importing nothing, whose agent types are
 * made in a loop (`counter-0` … `counter-39999`), each with one method `next` answering its index.
 */
const MODULE_SOURCE = `
const record = { root: { kind: "record", value: { fields: [] } } };
const u32 = { root: { kind: "u32", value: {} } };
const types = Array.from({ length: ${TYPES} }, (_, i) => ({
  name: \`counter-\${i}\`,
  constructorParameters: record,
  config: [],
  methods: [{ name: "next", parameters: record, result: u32 }],
  implementations: { next: async () => ({ kind: "u32", value: i }) },
}));
export default { applications: { big: { prod: types } } };
`;

const SELECT = ["-a", "big", "-e", "prod"];
const LAST = `counter-${TYPES - 1}`;

let server: ServerProcess;
beforeAll(async () => {
  const module = join(scratchDir(), "agents.mjs");
  writeFileSync(module, MODULE_SOURCE);
  server = await startServeAgents(module);
});
afterAll(async () => {
  await server?.stop();
});

it("types refuses the catalogue by default, exit 4, naming --max-catalogue-bytes and a size that reads it", async () => {
  const result = await run(["types", ...SELECT], { env: server.env });
  expect(result.code).toBe(EXIT.connectionLost);
  expect(result.stdout.length).toBe(0);
  expect(result.stderr).toMatch(
    /^golem-stream: the catalogue of application "big", environment "prod" is larger than --max-catalogue-bytes \(8MiB; the server declares 9\d{6} bytes\): run the command again with --max-catalogue-bytes 10MiB\n$/,
  );
});

it("types reads it with --max-catalogue-bytes, as text and as --json", async () => {
  const text = await run(["types", ...SELECT, "--max-catalogue-bytes", "10MiB"], { env: server.env });
  expect(text.stderr).toBe("");
  expect(text.code).toBe(EXIT.success);
  const lines = text.stdout.toString().split("\n");
  expect(lines[0]).toBe("big/prod");
  expect(lines.slice(-3)).toEqual([`  ${LAST}()`, "    next() -> u32", ""]);

  const json = await run(["types", ...SELECT, "--json", "--max-catalogue-bytes", "16MiB"], { env: server.env });
  expect(json.code).toBe(EXIT.success);
  expect(json.stdout.length).toBeGreaterThan(8 * 2 ** 20);
  const document = JSON.parse(json.stdout.toString()) as { agentTypes: { name: string }[] };
  expect(document.agentTypes).toHaveLength(TYPES);
  expect(document.agentTypes.at(-1)?.name).toBe(LAST);
});

it("invoke of the last agent type's method: refused before anything was sent by default, answered with the flag", async () => {
  const refused = await run(["invoke", LAST, "next", ...SELECT], { env: server.env });
  expect(refused.code).toBe(EXIT.connectionLost);
  expect(refused.stderr).toMatch(
    /is larger than --max-catalogue-bytes \(8MiB; .*: run the command again with --max-catalogue-bytes 10MiB\n$/,
  );

  const called = await run(["invoke", LAST, "next", ...SELECT, "--max-catalogue-bytes", "10MiB"], { env: server.env });
  expect(called.stderr).toBe("");
  expect(called.code).toBe(EXIT.success);
  expect(JSON.parse(called.stdout.toString())).toEqual({ result: TYPES - 1 });
});

it("codegen reads it with --max-catalogue-bytes, a contract for every agent type", async () => {
  const refused = await run(["codegen", ...SELECT], { env: server.env });
  expect(refused.code).toBe(EXIT.connectionLost);
  expect(refused.stderr).toMatch(/is larger than --max-catalogue-bytes \(8MiB; /);

  const written = await run(["codegen", ...SELECT, "--max-catalogue-bytes", "10MiB"], { env: server.env });
  expect(written.code).toBe(EXIT.success);
  expect(written.stdout.toString()).toContain(`export const counter${TYPES - 1}Contract = defineAgentType(`);
  expect(written.stderr).toMatch(new RegExp(`^${TYPES} contracts: `));
});

it("resume takes the flag as well (its note on a changed schema reads the catalogue)", async () => {
  const help = await run(["resume", "--help"]);
  expect(help.stdout.toString()).toMatch(/--max-catalogue-bytes <size> +the largest catalogue/);
});

it("a size past what the CLI can read is a usage error naming the flag's bound", async () => {
  const result = await run(["types", ...SELECT, "--max-catalogue-bytes", "1GiB"], { env: server.env });
  expect(result.code).toBe(EXIT.usage);
  expect(result.stderr).toMatch(/--max-catalogue-bytes <size>' argument '1GiB' is invalid\. .*at most 256MiB/);
});

/**
 * `golem-stream serve --agents` while the module loads, as a real process:
 * a TypeScript loader's syntax error is reported with its file, line and
 * text, as Node's own are; an error thrown while it loads with where in the
 * user's code; CommonJS as tsc emits it serves its `default`;
 * a top-level await that can never settle is
 * reported as a problem of the module (Node alone would exit 13 without a
 * word); and a signal while the module still loads stops serve.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { transformSync } from "esbuild";
import { expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { run, scratchDir, start, startServe, TOKEN, waitFor, type RunResult } from "./support/processes.js";

/** A TypeScript loader as `NODE_OPTIONS=--import=...` gives one (esbuild's errors, thrown as tsx throws them). */
const TS_LOADER = new URL("./fixtures/agents/esbuild-loader.mjs", import.meta.url).href;

/** A folder holding these files, and the path of the first one. */
function moduleFiles(files: Record<string, string>): string {
  const dir = scratchDir();
  for (const [name, source] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), source);
  }
  return join(dir, Object.keys(files)[0] ?? "");
}

/** `serve --agents file`, on a data directory that must not be created when the module is refused. */
function serveArgs(file: string, dataDir = join(scratchDir(), "state")): string[] {
  return ["serve", "--port", "0", "--token", TOKEN, "--data-dir", dataDir, "--agents", file];
}

function serve(file: string, env: Record<string, string> = {}): Promise<RunResult> {
  return run(serveArgs(file), { env });
}

/** The one line serve printed, after the file's name; and that it exited 78 with nothing on stdout. */
function refusal(result: RunResult, file: string): string {
  expect(result.code).toBe(EXIT.agentsInvalid);
  expect(result.stdout.length).toBe(0);
  const lines = result.stderr.split("\n").filter((line) => line !== "");
  expect(lines).toHaveLength(1);
  const prefix = `golem-stream: --agents ${file}: `;
  expect(lines[0]?.startsWith(prefix)).toBe(true);
  return lines[0]?.slice(prefix.length) ?? "";
}

it("a syntax error a TypeScript loader finds is reported with its line and text", async () => {
  const file = moduleFiles({ "agents.ts": "// the catalogue\nconst n: number = {;\nexport default { n };\n" });
  const result = await serve(file, { NODE_OPTIONS: `--import=${TS_LOADER}` });
  expect(refusal(result, file)).toBe('syntax error at line 2: Expected identifier but found ";"');
});

it("a syntax error a TypeScript loader finds in an imported module names that module", async () => {
  const file = moduleFiles({
    "agents.ts": 'import { settings } from "./lib/settings.ts";\nexport default settings;\n',
    "lib/settings.ts": "export const settings = {\n  port: 8080,\n  host: ,\n};\n",
  });
  const result = await serve(file, { NODE_OPTIONS: `--import=${TS_LOADER}` });
  expect(refusal(result, file)).toBe(`syntax error in ${join(file, "..", "lib", "settings.ts")} at line 3: Unexpected ","`);
});

const EMPTY_RECORD = '{ root: { kind: "record", value: { fields: [] } } }';
const CATALOGUE = `{ applications: { tutorial: { default: [{ name: "tally", constructorParameters: ${EMPTY_RECORD}, config: [], methods: [{ name: "run", parameters: ${EMPTY_RECORD} }], implementations: { run: async () => undefined } }] } } }`;

/** A module as tsc writes one for `"module": "commonjs"`: its default export is `exports.default`, beside the `__esModule` mark. */
function tscCommonJs(exportsDefault: boolean): string {
  const exported = exportsDefault ? `exports.default = ${CATALOGUE};\n` : `exports.catalogue = ${CATALOGUE};\n`;
  return `"use strict";\nObject.defineProperty(exports, "__esModule", { value: true });\n${exported}`;
}

it.each([
  ["a .cjs file", "agents.cjs"],
  ["a .js file of a package that is not of ES modules", "agents.js"],
])("CommonJS as tsc emits it serves its exports.default, not the exports object: %s", async (_, name) => {
  const file = moduleFiles({ [name]: tscCommonJs(true), "package.json": '{ "name": "my-agents" }\n' });
  const server = await startServe([...serveArgs(file).slice(1), "--log-level", "warn"]);
  try {
    await waitFor(server.running, () => server.running.stdout().toString().includes(`agents of ${file}:`), "the banner listed the agents");
    expect(server.running.stdout().toString()).toContain(`agents of ${file}: application tutorial, environment default: tally\n`);
  } finally {
    await server.stop();
  }
});

it("CommonJS as tsc emits it with no exports.default has no default export", async () => {
  const file = moduleFiles({ "agents.cjs": tscCommonJs(false) });
  expect(refusal(await serve(file), file)).toMatch(/^no default export: end it with export default defineCatalogue\(/);
});

it("a top-level await nothing can settle any more is refused with exit 78, not Node's silent exit 13", async () => {
  const file = moduleFiles({
    "agents.mjs": "// waits for a connection whose promise nothing settles\nawait new Promise(() => {});\nexport default {};\n",
  });
  const result = await serve(file);
  expect(refusal(result, file)).toMatch(/^its top-level await \(or that of a module it imports\) never settled: /);
});

it("a top-level await settled by what it leaves running is waited for, to its error", async () => {
  const file = moduleFiles({
    "agents.mjs": 'await new Promise((_, reject) => setImmediate(() => reject(new Error("no answer"))));\nexport default {};\n',
  });
  expect(refusal(await serve(file), file)).toBe(`it threw while loading: no answer (at ${file}:1:60)`);
});

it("an error thrown while loading names where in the user's code, relative to the working directory", async () => {
  const agents = moduleFiles({
    "dist/s8.js": 'import { cfg } from "./cfg.js";\nconst port = cfg.port;\nexport default port;\n',
    "dist/cfg.js": "export const cfg = undefined;\n",
    "package.json": '{ "type": "module" }\n',
  });
  const cwd = join(agents, "..", "..");
  const result = await run(serveArgs("dist/s8.js"), { cwd });
  expect(refusal(result, "dist/s8.js")).toBe(
    "it threw while loading: TypeError: Cannot read properties of undefined (reading 'port') (at dist/s8.js:2:18)",
  );
});

it("with --enable-source-maps, an error thrown while loading compiled TypeScript is placed in the .ts source", async () => {
  const source = "const cfg: { port: number } | undefined = undefined as never;\n\n// the mistake\nexport default cfg!.port;\n";
  const compiled = transformSync(source, { loader: "ts", format: "esm", sourcemap: "inline", sourcefile: "../src/agents.ts" }).code;
  const agents = moduleFiles({ "dist/agents.js": compiled, "src/agents.ts": source, "package.json": '{ "type": "module" }\n' });
  const result = await run(serveArgs("dist/agents.js"), { cwd: join(agents, "..", ".."), env: { NODE_OPTIONS: "--enable-source-maps" } });
  expect(refusal(result, "dist/agents.js")).toBe(
    "it threw while loading: TypeError: Cannot read properties of undefined (reading 'port') (at src/agents.ts:4:21)",
  );
});

it("an error a dependency throws is placed at the user's call of it, not in node_modules", async () => {
  const agents = moduleFiles({
    "agents.mjs": 'import { connect } from "db-client";\n\nexport default await connect("db:5432");\n',
    "node_modules/db-client/package.json": '{ "name": "db-client", "type": "module", "exports": "./index.js" }\n',
    "node_modules/db-client/index.js": "export async function connect(address) {\n  throw new Error(`no answer from ${address}`);\n}\n",
  });
  const result = await run(serveArgs("./agents.mjs"), { cwd: join(agents, "..") });
  expect(refusal(result, "./agents.mjs")).toBe("it threw while loading: no answer from db:5432 (at agents.mjs:3:22)");
});

it.each(["SIGINT", "SIGTERM"] as const)(
  "%s while the module's top-level await waits stops serve: exit 130, nothing started",
  async (signal) => {
    // The interval keeps the process alive: a module waiting for a server that does not answer.
    const file = moduleFiles({
      "agents.mjs": 'console.error("connecting");\nawait new Promise(() => setInterval(() => undefined, 60_000));\nexport default {};\n',
    });
    const dataDir = join(scratchDir(), "state");
    const running = start(serveArgs(file, dataDir));
    await waitFor(running, () => running.stderr().includes("connecting\n"), "the module started loading");
    running.child.kill(signal);
    const result = await running.done;
    expect(result.code).toBe(EXIT.interrupted);
    expect(result.stdout.length).toBe(0);
    expect(result.stderr).toBe(`connecting\ngolem-stream: --agents ${file}: interrupted while it was loading; nothing was started\n`);
    expect(existsSync(dataDir)).toBe(false);
  },
);

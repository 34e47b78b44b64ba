/**
 * `golem-stream serve --agents` as a real process, on a module of two agent
 * types in two applications (test/fixtures/agents/two-apps.js: `words`,
 * typed, in `text`; `adder`, untyped, in `math`/`prod`): discovery lists
 * exactly them, the CLI and a typed client call them, `codegen` writes a
 * contract that compiles and calls them, and `--demo` adds the demo beside.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "@golem-stream/client";
import { defineAgentType, t } from "@golem-stream/contract";
import { EXIT } from "../src/exit-codes.js";
import { BIN, itemsOf, run, scratchDir, startServeAgents, TOKEN, waitFor, type ServerProcess } from "./support/processes.js";

/** Relative to the package root, the tests' working directory: `--agents` resolves it against the caller's. */
const MODULE = "test/fixtures/agents/two-apps.js";
const require = createRequire(import.meta.url);
const PACKAGES = fileURLToPath(new URL("../../", import.meta.url));

/** The contract of `words` as a client writes it on its own side; `connect` checks it against the server's catalogue. */
const wordsContract = defineAgentType({
  name: "words",
  constructor: t.record({ language: t.string() }),
  methods: {
    split: { params: t.record({ text: t.stream(t.u8()) }), result: t.stream(t.record({ word: t.string(), length: t.u32() })) },
    repeat: { params: t.record({ word: t.string(), times: t.u32(), delayMs: t.u32() }), result: t.stream(t.string()) },
  },
});

interface Discovery {
  readonly agentTypes: readonly { readonly name: string; readonly methods: readonly { readonly name: string }[] }[];
}

async function discover(
  server: ServerProcess,
  application: string,
  environment: string,
): Promise<{ code: number | null; types: string[] }> {
  const result = await run(["types", "-a", application, "-e", environment, "--json"], { env: server.env });
  if (result.code !== EXIT.success) return { code: result.code, types: [] };
  const body = JSON.parse(result.stdout.toString()) as Discovery;
  return { code: result.code, types: body.agentTypes.map((type) => `${type.name}.${type.methods.map((method) => method.name).join(",")}`) };
}

describe("serve --agents with a catalogue of its own", () => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await startServeAgents(MODULE);
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("prints what it serves and how to list it", () => {
    const banner = server.running.stdout().toString();
    expect(banner).toContain(`agents of ${MODULE}: application text, environment default: words`);
    expect(banner).toContain(`agents of ${MODULE}: application math, environment prod: adder`);
    expect(banner).toContain("golem-stream types -a math -e prod");
    expect(banner).not.toContain("invoke echo");
    // The console link opens the first application served, not the demo's (the console's default).
    expect(banner).toMatch(/web console http:\/\/\S+\/\?application=text&environment=default /);
  });

  it("discovery lists exactly the module's agent types, and no demo", async () => {
    expect(await discover(server, "text", "default")).toEqual({ code: EXIT.success, types: ["words.split,repeat"] });
    expect(await discover(server, "math", "prod")).toEqual({ code: EXIT.success, types: ["adder.add"] });
    expect((await discover(server, "demo", "default")).code).toBe(EXIT.usage);
    expect((await discover(server, "math", "default")).code).toBe(EXIT.usage);
  });

  it("an unknown agent type's hint spells the types command with the options in effect, and run as printed it lists them", async () => {
    const result = await run(["invoke", "nope", "add", "-a", "math", "-e", "prod", "--url", server.url, "--max-catalogue-bytes", "16MiB"], {
      env: { GOLEM_STREAM_TOKEN: TOKEN },
    });
    expect(result.code).toBe(EXIT.usage);
    const hinted = `golem-stream types -a math -e prod --url ${server.url} --max-catalogue-bytes 16777216`;
    expect(result.stderr).toBe(`golem-stream: no agent type "nope" in math/prod (known: adder); see ${hinted}\n`);
    const listed = await run(hinted.split(" ").slice(1), { env: { GOLEM_STREAM_TOKEN: TOKEN } });
    expect(listed.code).toBe(EXIT.success);
    expect(listed.stdout.toString()).toMatch(/^math\/prod\n  adder\(\)\n/);
  });

  it("the CLI invokes the typed agent type with stdin streamed up and its words streamed back", async () => {
    const result = await run(["invoke", "words", "split", "-a", "text", "-c", '{"language":"en"}', "-"], {
      env: server.env,
      stdin: "streams both\n ways  ",
    });
    expect(result.code).toBe(EXIT.success);
    expect(itemsOf(result.stdout, "$")).toEqual([
      { word: "streams", length: 7 },
      { word: "both", length: 4 },
      { word: "ways", length: 4 },
    ]);
  });

  it("the CLI invokes the untyped agent type", async () => {
    const result = await run(["invoke", "adder", "add", "-a", "math", "-e", "prod", "-c", "{}", "2", "40"], { env: server.env });
    expect(result.code).toBe(EXIT.success);
    expect(JSON.parse(result.stdout.toString())).toEqual({ result: 42 });
  });

  it("a typed client connects with its own contract and streams both ways", async () => {
    const client = createClient({ url: server.url, token: TOKEN });
    const words = await client.connect(wordsContract, { application: "text", environment: "default", constructor: { language: "en" } });
    const encoder = new TextEncoder();
    const split = await words.split({ text: [encoder.encode("typed cli"), encoder.encode("ent works")] });
    const seen: { word: string; length: number }[] = [];
    for await (const item of split) seen.push(item);
    expect(seen).toEqual([
      { word: "typed", length: 5 },
      { word: "client", length: 6 },
      { word: "works", length: 5 },
    ]);
  });

  it("codegen writes a contract for it that compiles and calls it", async () => {
    const dir = consumerProject();
    const generated = await run(["codegen", "-a", "text", "--out", join(dir, "agents.ts")], { env: server.env });
    expect(generated.code).toBe(EXIT.success);
    writeFileSync(
      join(dir, "calls.ts"),
      `import { createClient } from "@golem-stream/client";
import { wordsContract } from "./agents.js";

export async function call(url: string, token: string): Promise<{ word: string; length: number }[]> {
  const words = await createClient({ url, token }).connect(wordsContract, { application: "text", environment: "default", constructor: { language: "en" } });
  const out: { word: string; length: number }[] = [];
  for await (const item of await words.split({ text: [new TextEncoder().encode("generated too")] })) out.push(item);
  return out;
}
`,
    );
    execFileSync(process.execPath, [require.resolve("typescript/bin/tsc"), "-p", dir], { stdio: "pipe" });
    const compiled = (await import(pathToFileURL(join(dir, "out", "calls.js")).href)) as {
      call(url: string, token: string): Promise<unknown>;
    };
    expect(await compiled.call(server.url, TOKEN)).toEqual([
      { word: "generated", length: 9 },
      { word: "too", length: 3 },
    ]);
  });
});

it("run by npx (npm_command=exec), the banner spells the command npx golem-stream: a bare golem-stream is not on the PATH", async () => {
  // What npm sets in the environment of what `npx golem-stream …` (or `npm exec`) runs.
  const env = { npm_command: "exec", npm_lifecycle_event: "npx" };
  const server = await startServeAgents(MODULE, [], { env });
  try {
    await waitFor(server.running, () => server.running.stdout().toString().includes("Stop with Ctrl-C"), "the banner was printed");
    const banner = server.running.stdout().toString();
    expect(banner).toContain("\n  npx golem-stream types -a text -e default\n");
    expect(banner.replaceAll("npx golem-stream", "")).not.toMatch(/(^|\s)golem-stream /m);
  } finally {
    await server.stop();
  }
});

it("serve --agents --demo serves the demo beside the module's agents, and the conformance kit passes against it", async () => {
  const server = await startServeAgents(MODULE, ["--demo", "--log-format", "json"], { logLevel: "info" });
  try {
    expect(server.running.stdout().toString()).toContain("demo catalogue: application demo, environment default: echo");
    // The log follows the banner: wait for its line, not for a time.
    await waitFor(server.running, () => server.running.stderr().includes('"server.start"'), "serve logged its start");
    const loaded = server.running
      .stderr()
      .split("\n")
      .filter((line) => line.includes('"agents.loaded"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(loaded).toMatchObject([{ level: "info", event: "agents.loaded", file: MODULE, demo: true }]);
    expect(await discover(server, "text", "default")).toEqual({ code: EXIT.success, types: ["words.split,repeat"] });
    expect((await discover(server, "demo", "default")).types.map((type) => type.split(".")[0])).toEqual(["echo"]);
    const counted = await run(["invoke", "echo", "count", "-c", '{"name":"x"}', "3", "0"], { env: server.env });
    expect(itemsOf(counted.stdout, "$")).toEqual([0, 1, 2]);
    // The conformance kit calls the demo: beside a module's agents it still passes.
    const conformance = await run([
      "conformance",
      "server",
      "--url",
      server.url.replace(/^http/, "ws"),
      "--token",
      TOKEN,
      "--only",
      "methods",
    ]);
    expect(conformance.code, conformance.stdout.toString() + conformance.stderr).toBe(EXIT.success);
  } finally {
    await server.stop();
  }
}, 120_000);

/** A project outside the workspace whose node_modules link to the workspace's packages, as an installed app's would. */
function consumerProject(): string {
  const dir = scratchDir();
  mkdirSync(join(dir, "node_modules", "@golem-stream"), { recursive: true });
  mkdirSync(join(dir, "node_modules", "@types"), { recursive: true });
  for (const name of ["contract", "client"]) symlinkSync(join(PACKAGES, name), join(dir, "node_modules", "@golem-stream", name), "dir");
  symlinkSync(dirname(require.resolve("@types/node/package.json")), join(dir, "node_modules", "@types", "node"), "dir");
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "agents-consumer", private: true, type: "module" }));
  const compilerOptions = {
    strict: true,
    module: "nodenext",
    moduleResolution: "nodenext",
    target: "es2022",
    outDir: "out",
    rootDir: ".",
    types: ["node"],
    skipLibCheck: true,
  };
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions, include: ["*.ts"] }));
  return dir;
}

it.each([
  ["started as node_modules/.bin/golem-stream (npm's link in a project)", "npx golem-stream", "node_modules/.bin/golem-stream"],
  ["started by a global install's link on the PATH", "golem-stream", "bin/golem-stream"],
])("%s, the banner spells the command %s", async (_, spelled, link) => {
  const dir = scratchDir();
  mkdirSync(dirname(join(dir, link)), { recursive: true });
  symlinkSync(BIN, join(dir, link));
  const server = await startServeAgents(MODULE, [], { executable: join(dir, link) });
  try {
    await waitFor(server.running, () => server.running.stdout().toString().includes("Stop with Ctrl-C"), "the banner was printed");
    expect(server.running.stdout().toString()).toContain(`\n  ${spelled} types -a text -e default\n`);
  } finally {
    await server.stop();
  }
});

it("run by a package.json script (npm run serve), the banner spells the command npx golem-stream", async () => {
  // What npm sets in the environment of a script it runs.
  const env = { npm_command: "run-script", npm_lifecycle_event: "serve", npm_execpath: "/usr/lib/node_modules/npm/bin/npm-cli.js" };
  const server = await startServeAgents(MODULE, [], { env });
  try {
    await waitFor(server.running, () => server.running.stdout().toString().includes("Stop with Ctrl-C"), "the banner was printed");
    expect(server.running.stdout().toString()).toContain("\n  npx golem-stream types -a text -e default\n");
  } finally {
    await server.stop();
  }
});

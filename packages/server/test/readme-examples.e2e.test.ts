/**
 * The README's TypeScript examples: every block type-checks under `strict` against the built
 * package, imported by name as a user would (a fragment gets the names it relies on declared in
 * front of it, `CONTEXT`, one entry per block in order, so a new or moved block fails here until
 * its context is written down). "Your own server" also runs, as written but for its port and
 * data directory: it serves its catalogue to its token only, and keeps its keyring across a
 * restart.
 */
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import ts from "typescript";
import { afterAll, expect, it } from "vitest";

const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
// Inside the package, so `@golem-stream/server` resolves to this package as for a user.
const dir = mkdtempSync(join(fileURLToPath(new URL(".", import.meta.url)), ".readme-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** What each block (in README order) takes from the text around it. */
const CONTEXT: readonly string[] = [
  "",
  "",
  // The catalogue block serves the agent type the block before it implemented.
  `import type { AgentTypeDefinition } from "@golem-stream/server";\ndeclare const shouterAgent: AgentTypeDefinition;\n`,
  // The durable example settles through a bank client of the reader's own.
  `declare const bank: { settle(id: string): Promise<{ number: string }> };\n`,
  "",
  `import type { AgentHost, Keyring, SessionStore } from "@golem-stream/server";\ndeclare const store: SessionStore, host: AgentHost, keyring: Keyring;\n`,
  `import type { SessionServerOptions } from "@golem-stream/server";\ndeclare const options: SessionServerOptions;\n`,
];
/** The index of "Your own server and agents" among the blocks. */
const OWN_SERVER = 4;

function tsBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^( *)```ts\n([\s\S]*?)^\1```$/gm)].map((match) =>
    (match[2] ?? "").replace(new RegExp(`^${match[1]}`, "gm"), ""),
  );
}

it("every TypeScript example of the README compiles under strict", async () => {
  const blocks = tsBlocks(readme);
  expect(blocks.length, "a README block was added or removed: update CONTEXT").toBe(CONTEXT.length);
  const files = blocks.map((block, index) => {
    const name = `block-${index + 1}.ts`;
    writeFileSync(join(dir, name), `${CONTEXT[index]}${block}\nexport {};\n`);
    return name;
  });
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: "es2022",
        module: "nodenext",
        moduleResolution: "nodenext",
        types: ["node"],
        skipLibCheck: true,
      },
      files,
    }),
  );
  const output = await promisify(execFile)(process.execPath, [tsc, "-p", join(dir, "tsconfig.json"), "--pretty", "false"]).then(
    () => "",
    (error: { stdout?: string; stderr?: string }) => `${error.stdout ?? ""}${error.stderr ?? ""}`,
  );
  expect(output).toBe("");
}, 60_000);

/** Runs the block compiled to JavaScript in `cwd` until it prints its URL; resolves with the URL and a stop function. */
async function runOwnServer(script: string, cwd: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [script], { cwd, env: { PATH: process.env["PATH"] ?? "" }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const found = /^listening on (ws:\/\/\S+)$/m.exec(out)?.[1];
      if (found !== undefined) resolve(found);
    });
    child.once("exit", (code) => reject(new Error(`the example exited (${code}) before listening: ${err}`)));
  });
  return {
    url,
    stop: async () => {
      child.kill("SIGKILL");
      await exited;
    },
  };
}

it("Your own server runs: its catalogue for its token only, and the same keyring after a restart", async () => {
  const block = tsBlocks(readme)[OWN_SERVER] ?? "";
  expect(block).toContain("await sessions.listen(9000);");
  expect(block).toContain('const dataDir = "./data";');
  // Port 0 (any free one) instead of 9000; ./data is relative to the folder it runs in, a scratch one.
  const source = block.replace("await sessions.listen(9000);", "await sessions.listen(0);");
  const { outputText } = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } });
  const script = join(dir, "own-server.mjs");
  writeFileSync(script, outputText);
  const cwd = mkdtempSync(join(dir, "run-"));

  const first = await runOwnServer(script, cwd);
  const keyringFile = join(cwd, "data", "keyring.json");
  const keyring = readFileSync(keyringFile, "utf8");
  try {
    expect(statSync(keyringFile).mode & 0o777).toBe(0o600);
    const types = new URL("/v1/agents/types?application=myapp&environment=prod", first.url.replace(/^ws/, "http"));
    const served = await fetch(types, { headers: { authorization: "Bearer s3cret" } });
    expect(served.status).toBe(200);
    expect(((await served.json()) as { agentTypes: { name: string }[] }).agentTypes.map((type) => type.name)).toEqual(["shouter"]);
    expect((await fetch(types, { headers: { authorization: "Bearer not-the-token" } })).status).toBe(401);
  } finally {
    await first.stop();
  }
  const second = await runOwnServer(script, cwd);
  await second.stop();
  expect(readFileSync(keyringFile, "utf8")).toBe(keyring);
}, 60_000);

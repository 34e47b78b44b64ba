/**
 * Every TypeScript example in README.md type-checks under `strict` against the built package,
 * imported by name as a user would; so do those of the contract package's README, whose client
 * and server halves need this package and the server (which the contract package must not). A
 * fragment that continues an earlier example gets the names it relies on declared in front of it
 * (`CONTEXT`, one entry per block, in order), so a new or moved block fails here until its context
 * is written down. The example in the comment that opens src/index.ts, what an editor shows for
 * the package, is checked the same way.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, expect, it } from "vitest";

const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
// Inside the package, so `@golem-stream/client` resolves through its node_modules as for a user.
const dir = mkdtempSync(join(fileURLToPath(new URL(".", import.meta.url)), ".readme-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const client = `import { createClient } from "@golem-stream/client";\ndeclare const client: ReturnType<typeof createClient>;\n`;
const call = `import type { Invocation } from "@golem-stream/client";\ndeclare const call: Invocation;\n`;
/** What each block (in README order) takes from the text around it. */
const CONTEXT: readonly string[] = [
  "",
  `${client}declare const file: Blob;\n`,
  `${client}import type { OutputStream } from "@golem-stream/client";\n`,
  call,
  `import type { OutputStream } from "@golem-stream/client";\ndeclare const result: { js(): unknown };\n`,
  `${client}${call}`,
  `${client}import type { TypedAgent } from "@golem-stream/client";\nimport { echoContract } from "@golem-stream/contract/demo";\n` +
    `declare const echo: TypedAgent<typeof echoContract>;\n`,
  "",
  // A private CA for wsTransport: imports all it uses.
  "",
  `import type { ServerMessage, ClientMessage, ProtocolError } from "@golem-stream/wire";\n`,
  // undici's WebSocket, whose second argument is an init object (the DOM's takes protocols only).
  `import { createClient, webSocketTransport } from "@golem-stream/client";\ndeclare const url: string, token: string;\n` +
    `declare const WebSocket: new (url: string, init: { protocols: string[]; headers: Record<string, string> }) => globalThis.WebSocket;\n`,
];

function tsBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^( *)```ts\n([\s\S]*?)^\1```$/gm)].map((match) =>
    (match[2] ?? "").replace(new RegExp(`^${match[1]}`, "gm"), ""),
  );
}

/** The contract README's blocks: the declaration of `files`, its server half, its client half, a recursive graph. */
const contractReadme = readFileSync(new URL("../../contract/README.md", import.meta.url), "utf8");
const files = `import { files } from "./contract-1.js";\n`;
const CONTRACT_CONTEXT: readonly string[] = ["", files, files, `import { defineAgentType, t } from "@golem-stream/contract";\n`];

it("every TypeScript example of the README compiles under strict", async () => {
  expect(await typeCheck(readme, CONTEXT, "block")).toBe("");
}, 60_000);

it("the example in the comment that opens src/index.ts compiles under strict", async () => {
  const source = readFileSync(new URL("../src/index.ts", import.meta.url), "utf8");
  const opening = source.slice(source.indexOf("/**"), source.indexOf("*/"));
  const text = opening.replace(/^ ?\* ?/gm, "");
  expect(await typeCheck(text, [""], "index")).toBe("");
}, 60_000);

it("every TypeScript example of the contract package's README compiles under strict", async () => {
  expect(await typeCheck(contractReadme, CONTRACT_CONTEXT, "contract")).toBe("");
}, 60_000);

/** Writes each block of `markdown` with its context as `<prefix>-N.ts` and type-checks them together: tsc's complaints, or "". */
async function typeCheck(markdown: string, context: readonly string[], prefix: string): Promise<string> {
  const blocks = tsBlocks(markdown);
  expect(blocks.length, "a README block was added or removed: update its CONTEXT").toBe(context.length);
  const files = blocks.map((block, index) => {
    const name = `${prefix}-${index + 1}.ts`;
    writeFileSync(join(dir, name), `${context[index]}${block}\nexport {};\n`);
    return name;
  });
  const project = join(dir, `tsconfig.${prefix}.json`);
  writeFileSync(
    project,
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: "es2022",
        module: "nodenext",
        moduleResolution: "nodenext",
        lib: ["es2022", "dom"],
        types: ["node"],
        skipLibCheck: true,
      },
      files,
    }),
  );
  return promisify(execFile)(process.execPath, [tsc, "-p", project, "--pretty", "false"]).then(
    () => "",
    (error: { stdout?: string; stderr?: string }) => `${error.stdout ?? ""}${error.stderr ?? ""}`,
  );
}

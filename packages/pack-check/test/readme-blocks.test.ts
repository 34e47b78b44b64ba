/**
 * The TypeScript examples of the package READMEs that have no test of their own (client, server
 * and contract check theirs; wire, schema-value and tokens run theirs) type-check under `strict`
 * against the built packages, imported by name as a user would. This package depends on all of
 * them, so every import resolves here. A fragment gets the names it relies on declared in front of
 * it (`CONTEXT`, one entry per block in README order), so a new or moved block fails here until
 * its context is written down.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, expect, it } from "vitest";
import { workspaceRoot } from "./support/tarballs.js";

const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
// Inside this package, so `@golem-stream/…` resolve through its node_modules.
const dir = mkdtempSync(path.join(import.meta.dirname, ".readme-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const CONTEXT: Readonly<Record<string, readonly string[]>> = {
  cli: [""],
  conformance: ["declare const token: string;\n", "", ""],
  console: [""],
  "store-postgres": [
    `import type { AgentHost, Authenticator } from "@golem-stream/server";\nimport type { Keyring } from "@golem-stream/tokens";\n` +
      "declare const host: AgentHost, keyring: Keyring, authenticator: Authenticator;\n",
    `import { PostgresSessionStore } from "@golem-stream/store-postgres";\n`,
  ],
};

function tsBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^( *)```ts\n([\s\S]*?)^\1```$/gm)].map((match) =>
    (match[2] ?? "").replace(new RegExp(`^${match[1]}`, "gm"), ""),
  );
}

it.each(Object.keys(CONTEXT))(
  "every TypeScript example of the %s README compiles under strict",
  async (name) => {
    const context = CONTEXT[name] ?? [];
    const blocks = tsBlocks(readFileSync(path.join(workspaceRoot, "packages", name, "README.md"), "utf8"));
    expect(blocks.length, "a README block was added or removed: update CONTEXT").toBe(context.length);
    const files = blocks.map((block, index) => {
      const file = `${name}-${index + 1}.ts`;
      writeFileSync(path.join(dir, file), `${context[index]}${block}\nexport {};\n`);
      return file;
    });
    const project = path.join(dir, `tsconfig.${name}.json`);
    writeFileSync(
      project,
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
    const output = await promisify(execFile)(process.execPath, [tsc, "-p", project, "--pretty", "false"]).then(
      () => "",
      (error: { stdout?: string; stderr?: string }) => `${error.stdout ?? ""}${error.stderr ?? ""}`,
    );
    expect(output).toBe("");
  },
  60_000,
);

/**
 * `golem-stream serve --agents` while the module loads, as a real process:
 * a TypeScript loader's syntax error is reported with its file, line and
 * text, as Node's own are.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { run, scratchDir, TOKEN, type RunResult } from "./support/processes.js";

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

function serve(file: string, env: Record<string, string> = {}): Promise<RunResult> {
  return run(["serve", "--port", "0", "--token", TOKEN, "--data-dir", join(scratchDir(), "state"), "--agents", file], { env });
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

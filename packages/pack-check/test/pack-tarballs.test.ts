/**
 * The route the root README documents for using the packages outside the checkout before they are
 * published: `pnpm pack-tarballs DIR` (scripts/pack-tarballs.mjs) packs every publishable package
 * and prints one `npm install` line per package. Here that line, run verbatim in a project
 * outside the workspace, installs a package whose siblings are unpublished, and it runs.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, expect, it } from "vitest";
import { consumerEnv, consumerNode } from "./support/consumer.js";
import { publishablePackages, workspaceRoot } from "./support/tarballs.js";

const run = promisify(execFile);
const root = mkdtempSync(path.join(tmpdir(), "golem-stream-pack-tarballs-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The printed install line of `name`, as words. */
function installLine(printed: string, name: string): string[] {
  const lines = printed.split("\n");
  const at = lines.indexOf(name);
  const line = lines[at + 1];
  if (at < 0 || line === undefined || !line.startsWith("  npm install ")) throw new Error(`no install line for ${name} in:\n${printed}`);
  return line.trim().split(" ");
}

it("packs every publishable package and prints install lines that work outside the checkout", async () => {
  // Relative to the folder it is typed in (INIT_CWD, which pnpm sets for a root script).
  const { stdout } = await run(process.execPath, [path.join(workspaceRoot, "scripts", "pack-tarballs.mjs"), "tarballs"], {
    env: { ...consumerEnv(), INIT_CWD: root },
  });
  const tarballs = path.join(root, "tarballs");
  expect(stdout).toContain(`Packed ${publishablePackages().length} packages into ${tarballs}.`);
  for (const { name } of publishablePackages())
    expect(installLine(stdout, name)[2]).toMatch(new RegExp(`^${tarballs}/golem-stream-.*\\.tgz$`));
  // The client brings what it imports at run time, and nothing of the server's.
  expect(
    installLine(stdout, "@golem-stream/client")
      .slice(2)
      .map((file) => path.basename(file).replace(/-\d+\.\d+\.\d+.*$/, "")),
  ).toEqual(["golem-stream-client", "golem-stream-contract", "golem-stream-schema-value", "golem-stream-wire"]);

  // A package with unpublished siblings and no third-party dependency: installs with npm offline.
  const project = path.join(root, "project");
  const [npm, ...args] = installLine(stdout, "@golem-stream/contract");
  mkdirSync(project);
  writeFileSync(
    path.join(project, "package.json"),
    `${JSON.stringify({ name: "outside", version: "1.0.0", private: true, type: "module" })}\n`,
  );
  await run(npm as string, [...args, "--offline", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: project, env: consumerEnv() });
  const script =
    'import { defineAgentType, t } from "@golem-stream/contract"; console.log(defineAgentType({ name: "a", constructor: t.record({}), methods: {} }).name);';
  const { stdout: ran } = await run(consumerNode, ["--input-type=module", "-e", script], { cwd: project, env: consumerEnv() });
  expect(ran).toBe("a\n");
});

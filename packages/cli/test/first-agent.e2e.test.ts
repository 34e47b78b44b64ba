/**
 * docs/first-agent.md runs as written. Its files (each TypeScript block names its path on its
 * first line, the one JSON block is tsconfig.json) go into a folder inside this package, so the
 * workspace's @golem-stream packages resolve as the tarballs would in the reader's project; its
 * `package.json` stands for `npm init -y && npm pkg set type=module`. Then its shell blocks run in
 * order, `npx golem-stream` and `npx tsc` being this package's executable and the workspace's
 * TypeScript: the server's block in a terminal of its own (with `--port 0` appended, so a busy
 * 8080 does not matter; the other terminal gets its URL as GOLEM_STREAM_URL), every other block in
 * a second terminal that keeps the `export`s of the blocks before it, and each block's stdout must
 * be the text block that follows it. The setup blocks (clone, pack, npm install) are not run:
 * installing from tarballs is pack-check's test; nor is the development loop (`--watch`), which
 * never ends. The tutorial's own tests (`node --test`) run in the second terminal too. Its links resolve, to the headings they name.
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { BIN } from "./support/processes.js";

const TUTORIAL = fileURLToPath(new URL("../../../docs/first-agent.md", import.meta.url));
const tutorial = readFileSync(TUTORIAL, "utf8");
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
// Inside the package, so `@golem-stream/server` and the others resolve to the workspace's.
const dir = mkdtempSync(join(fileURLToPath(new URL(".", import.meta.url)), ".first-agent-"));

interface Block {
  readonly lang: string;
  readonly body: string;
}
const blocks: Block[] = [...tutorial.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((match) => ({
  lang: match[1] ?? "",
  body: match[2] ?? "",
}));
const isSetup = (block: Block): boolean => /^(git|pnpm|npm|mkdir) /m.test(block.body);
/** The development loop (a server restarted whenever the module changes): it never ends, and is not run here. */
const isWatch = (block: Block): boolean => /--watch/.test(block.body);
const isServer = (block: Block): boolean => / serve /.test(block.body) && !isWatch(block);

interface Outcome {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A terminal: `sh -e` in the project folder, with `npx` answering for the two commands the tutorial uses. */
function shell(script: string, env: Record<string, string> = {}): { child: ChildProcess; stdout: () => string; done: Promise<Outcome> } {
  const child = spawn("sh", ["-ec", script], {
    cwd: dir,
    env: { PATH: `${join(dir, ".bin")}:${process.env["PATH"] ?? ""}`, HOME: process.env["HOME"] ?? "/tmp", ...env },
    stdio: ["ignore", "pipe", "pipe"],
    // Its own process group: stopping the server's terminal stops what runs in it.
    detached: true,
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const done = new Promise<Outcome>((resolve) => child.once("close", (code) => resolve({ code, stdout, stderr })));
  return { child, stdout: () => stdout, done };
}

let server: ReturnType<typeof shell> | undefined;

beforeAll(() => {
  mkdirSync(join(dir, ".bin"));
  writeFileSync(
    join(dir, ".bin", "npx"),
    [
      "#!/bin/sh",
      'case "$1" in',
      `  golem-stream) shift; exec "${process.execPath}" "${BIN}" "$@";;`,
      `  tsc) shift; exec "${process.execPath}" "${tsc}" "$@";;`,
      '  *) echo "npx $1: not part of the tutorial" >&2; exit 127;;',
      "esac",
      "",
    ].join("\n"),
  );
  chmodSync(join(dir, ".bin", "npx"), 0o755);
  writeFileSync(join(dir, "package.json"), `${JSON.stringify({ name: "my-agent", private: true, type: "module" })}\n`);
  for (const block of blocks.filter((candidate) => candidate.lang === "ts")) {
    const path = /^\/\/ (\S+\.ts)\n/.exec(block.body)?.[1];
    if (path === undefined) throw new Error(`a TypeScript block of the tutorial does not name its file on its first line:\n${block.body}`);
    mkdirSync(join(dir, dirname(path)), { recursive: true });
    writeFileSync(join(dir, path), block.body);
  }
  const [tsconfig, ...more] = blocks.filter((block) => block.lang === "json");
  if (tsconfig === undefined || more.length > 0) throw new Error("the tutorial has one JSON block, its tsconfig.json");
  writeFileSync(join(dir, "tsconfig.json"), tsconfig.body);
});

afterAll(async () => {
  if (server !== undefined && server.child.pid !== undefined && server.child.exitCode === null) {
    const done = server.done;
    process.kill(-server.child.pid, "SIGKILL");
    await done;
  }
  rmSync(dir, { recursive: true, force: true });
});

it("has the blocks this test runs: a contract, an implementation, a client, a server and calls", () => {
  expect(blocks.filter((block) => block.lang === "ts").map((block) => block.body.split("\n")[0])).toEqual([
    "// src/contract.ts",
    "// src/agents.ts",
    "// src/client.ts",
    "// src/tally.test.ts",
  ]);
  expect(blocks.filter(isSetup)).toHaveLength(2);
  expect(blocks.filter(isServer)).toHaveLength(1);
  expect(blocks.filter(isWatch)).toHaveLength(1);
  expect(JSON.parse(blocks.find((block) => block.lang === "json")?.body ?? "{}")).toMatchObject({ compilerOptions: { strict: true } });
});

it("its TypeScript compiles under strict with its tsconfig.json", async () => {
  const { code, stdout, stderr } = await shell("npx tsc --pretty false").done;
  expect(`${stdout}${stderr}`).toBe("");
  expect(code).toBe(0);
}, 60_000);

it("served by serve --agents, the client script and the CLI print what the tutorial shows", async () => {
  const serverBlock = blocks.find(isServer) as Block;
  const script = serverBlock.body.replace(/^(npx golem-stream serve .*)$/m, "$1 --port 0");
  expect(script).toContain("--port 0");
  server = shell(script);
  const url = await new Promise<string>((resolve, reject) => {
    const check = () => {
      const found = /^listening on (http:\/\/\S+)$/m.exec(server?.stdout() ?? "")?.[1];
      if (found !== undefined) resolve(found);
    };
    server?.child.stdout?.on("data", check);
    void server?.done.then((outcome) =>
      reject(new Error(`the server's block exited (${outcome.code}) before listening: ${outcome.stderr}`)),
    );
  });
  expect(server.stdout()).toContain("agents of dist/agents.js: application tutorial, environment default: tally");

  // The second terminal: every block after the server's that is not setup, with the exports before it.
  const exports: string[] = [];
  const ran: string[] = [];
  for (let index = blocks.indexOf(serverBlock) + 1; index < blocks.length; index++) {
    const block = blocks[index] as Block;
    if (block.lang !== "sh" || isSetup(block) || isWatch(block)) continue;
    const outcome = await shell(`${exports.join("\n")}\n${block.body}`, { GOLEM_STREAM_URL: url }).done;
    expect(outcome.stderr, block.body).not.toMatch(/error/i);
    expect(outcome.code, `${block.body}\n${outcome.stderr}`).toBe(0);
    const shown = blocks[index + 1];
    if (shown?.lang === "text") expect(outcome.stdout, block.body).toBe(shown.body);
    exports.push(...block.body.split("\n").filter((line) => line.startsWith("export ")));
    ran.push(block.body);
  }
  // The client script, the catalogue, both methods from the CLI, and the tests.
  expect(ran.join("\n")).toMatch(
    /node dist\/client\.js[\s\S]*types -a tutorial[\s\S]*invoke tally sum[\s\S]*invoke tally countdown[\s\S]*node --test dist/,
  );
}, 60_000);

it("every relative link of the tutorial resolves, to the heading it names", () => {
  const anchorsOf = (file: string): Set<string> =>
    new Set(
      [...readFileSync(file, "utf8").matchAll(/^#{1,6} (.*)$/gm)].map((match) =>
        (match[1] as string)
          .toLowerCase()
          .replace(/[^\p{L}\p{N} _-]/gu, "")
          .replace(/ /g, "-"),
      ),
    );
  const links = [...tutorial.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1] as string).filter((href) => !/^[a-z]+:/.test(href));
  expect(links.length).toBeGreaterThan(5);
  const broken = links.filter((href) => {
    const [path, anchor] = href.split("#") as [string, string | undefined];
    const target = path === "" ? TUTORIAL : resolve(dirname(TUTORIAL), path);
    if (!existsSync(target)) return true;
    return anchor !== undefined && !anchorsOf(target).has(anchor);
  });
  expect(broken).toEqual([]);
});

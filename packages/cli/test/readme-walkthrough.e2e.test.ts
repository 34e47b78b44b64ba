/**
 * The root README's CLI walkthrough ("Using the CLI"), run line by line in one bash, as a user
 * would type it, in a scratch folder of the checkout: a server in the background with its log in a
 * file, the catalogue, a real input (the node binary) through digest, a pipe through reverse, a
 * count killed with `kill -9` midway and resumed, and codegen. Only the port differs (a free one
 * instead of 8080, as other tests run beside this one), and the state directory is the scratch
 * folder's. Between lines the test waits for what a user waits for: serve's `listening on` line,
 * some lines in out.txt before the kill.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, watch } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";
import { freePort } from "./support/free-port.js";
import { track } from "./support/processes.js";

const REPOSITORY = fileURLToPath(new URL("../../../", import.meta.url));
// In the checkout (pnpm finds the workspace from there), where git ignores it.
const scratchParent = join(REPOSITORY, "tmp");
mkdirSync(scratchParent, { recursive: true });
const folder = mkdtempSync(join(scratchParent, "readme-walkthrough-"));
/** Processes the walkthrough started in the background: killed after the file if still there. */
const background: number[] = [];
afterAll(() => {
  for (const pid of background) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone, as it should be
    }
  }
  rmSync(folder, { recursive: true, force: true });
});

/** The command lines of the first sh block under "## Using the CLI". */
function walkthrough(): string[] {
  const readme = readFileSync(join(REPOSITORY, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## Using the CLI"));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? "";
  return block.split("\n").filter((line) => line.trim() !== "");
}

/** One bash reading lines from the test; each line's stdout and status come back once it is done. */
class Shell {
  readonly #child;
  #out = "";
  #err = "";
  #taken = 0;
  #count = 0;
  readonly #waiters = new Set<() => void>();

  constructor(cwd: string, env: NodeJS.ProcessEnv) {
    this.#child = track(spawn("bash", [], { cwd, env, stdio: ["pipe", "pipe", "pipe"] }));
    this.#child.stdout.on("data", (chunk: Buffer) => this.#heard((this.#out += chunk.toString())));
    this.#child.stderr.on("data", (chunk: Buffer) => this.#heard((this.#err += chunk.toString())));
  }

  get stdout(): string {
    return this.#out;
  }

  get stderr(): string {
    return this.#err;
  }

  /** Runs `line`; resolves with its exit status and what it printed on stdout. */
  async run(line: string): Promise<{ status: number; output: string }> {
    const marker = `@@done-${++this.#count}@@`;
    this.#child.stdin.write(`${line}\nprintf '\\n${marker}%s\\n' "$?"\n`);
    const pattern = new RegExp(`\\n${marker}(\\d+)\\n`);
    await this.until(() => pattern.test(this.#out.slice(this.#taken)), `${line} finished`);
    const rest = this.#out.slice(this.#taken);
    const match = pattern.exec(rest) as RegExpExecArray;
    this.#taken += match.index + match[0].length;
    return { status: Number(match[1]), output: rest.slice(0, match.index) };
  }

  /** Resolves once `predicate` holds, checked whenever the shell prints something (or `also` fires). */
  until(predicate: () => boolean, what: string, also?: (wake: () => void) => () => void): Promise<void> {
    return new Promise((resolve, reject) => {
      const stopAlso = also?.(() => check());
      const finish = (): void => {
        this.#waiters.delete(check);
        this.#child.off("exit", onExit);
        stopAlso?.();
      };
      const check = (): void => {
        if (!predicate()) return;
        finish();
        resolve();
      };
      const onExit = (): void => {
        finish();
        reject(new Error(`bash exited before ${what}; stderr: ${this.#err}`));
      };
      this.#waiters.add(check);
      this.#child.once("exit", onExit);
      check();
    });
  }

  #heard(_text: string): void {
    for (const wake of [...this.#waiters]) wake();
  }
}

/** The child processes of `pid` (Linux: each thread lists the children it started). */
function childrenOf(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).flatMap((thread) => {
    const text = readFileSync(`/proc/${pid}/task/${thread}/children`, "utf8").trim();
    return text === "" ? [] : text.split(/\s+/).map(Number);
  });
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Resolves once `pid` has exited; processes give no exit event to strangers, so it looks every 20 ms. */
async function gone(pid: number): Promise<void> {
  for (let waited = 0; alive(pid); waited += 20) {
    if (waited > 60_000) throw new Error(`process ${pid} still runs after a minute`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The lines of `file` as numbers; none while the shell has not created it yet (a background job's redirection). */
const numbers = (file: string): number[] =>
  (existsSync(file) ? readFileSync(file, "utf8") : "")
    .split("\n")
    .filter((line) => line !== "")
    .map(Number);

it("runs as written: serve, types, digest of a real file, reverse, count killed midway and resumed, codegen", async () => {
  const lines = walkthrough();
  expect(lines).toHaveLength(9);
  const port = String(await freePort());
  const asTyped = lines.map((line) =>
    line.replaceAll("8080", port).replace("pnpm golem-stream serve ", `pnpm golem-stream serve --port ${port} `),
  );
  const [serve, exportLine, types, digest, reverse, count, kill, resume, codegen] = asTyped as [
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  const shell = new Shell(folder, {
    PATH: process.env["PATH"] ?? "",
    HOME: process.env["HOME"] ?? "/tmp",
    XDG_STATE_HOME: join(folder, "state"),
  });

  expect(await shell.run(serve)).toMatchObject({ status: 0 });
  const servePnpm = Number((await shell.run("echo $!")).output.trim());
  background.push(servePnpm);
  await shell.until(() => /^Stop with Ctrl-C\.$/m.test(shell.stdout), "serve printed its banner");
  background.push(...childrenOf(servePnpm));
  expect(shell.stdout).toContain(`listening on http://127.0.0.1:${port}\n`);
  expect(shell.stdout).toContain("\n  pnpm golem-stream types\n");

  // (Its output holds the end of serve's banner, which was printed meanwhile.)
  expect((await shell.run(exportLine)).status).toBe(0);
  const listed = await shell.run(types);
  expect(listed.status).toBe(0);
  expect(listed.output).toMatch(/echo/);

  const node = (await shell.run("command -v node")).output.trim();
  const digested = await shell.run(digest);
  expect(digested.status).toBe(0);
  const sha256 = createHash("sha256").update(readFileSync(node)).digest("hex");
  expect(digested.output).toContain(sha256);

  expect(await shell.run(reverse)).toEqual({ status: 0, output: "eno\nowt\n" });

  // count in the background, into out.txt; the kill once some lines are there.
  expect((await shell.run(count)).status).toBe(0);
  const countPnpm = Number((await shell.run("echo $!")).output.trim());
  const outFile = join(folder, "out.txt");
  await shell.until(
    () => numbers(outFile).length >= 20,
    "out.txt has 20 lines",
    (wake) => {
      const watcher = watch(folder, wake);
      return () => watcher.close();
    },
  );
  const countCli = childrenOf(countPnpm);
  background.push(countPnpm, ...countCli);
  expect(countCli).toHaveLength(1);
  expect((await shell.run(kill)).status).toBe(0);
  // The CLI ends with its pnpm: nothing else writes out.txt from here on.
  await gone(countCli[0] as number);
  const beforeResume = numbers(outFile);
  expect(beforeResume.length).toBeGreaterThanOrEqual(20);
  expect(beforeResume.length).toBeLessThan(1000);

  const resumed = await shell.run(resume);
  expect(resumed.status).toBe(0);
  // Resume starts at the checkpoint, written in batches (--checkpoint-interval): what was printed
  // after its last write repeats; nothing is skipped.
  const upTo = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);
  expect(beforeResume).toEqual(upTo(0, beforeResume.length - 1));
  const after = numbers(outFile).slice(beforeResume.length);
  const from = after[0] ?? Number.NaN;
  expect(from).toBeLessThanOrEqual(beforeResume.length);
  expect(after).toEqual(upTo(from, 999));

  const generated = await shell.run(codegen);
  expect(generated.status).toBe(0);
  expect(readFileSync(join(folder, "agents.ts"), "utf8")).toContain("export const echoContract = defineAgentType(");

  // serve's log went to its file, not between the commands' output.
  expect(readFileSync(join(folder, "serve.log"), "utf8")).toContain('"msg":"session started"');
  expect(shell.stdout).not.toContain("session started");
  await shell.run("kill %1; wait");
}, 120_000);

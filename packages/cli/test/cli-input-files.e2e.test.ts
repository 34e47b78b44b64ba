/**
 * A stream parameter takes `-` (stdin) or a file to read, so a method with two input streams is
 * called from the command line: test/fixtures/agents/shapes.js's `merge` prints its `left` lines,
 * then its `right` lines. What cannot be read is refused before anything is sent, and a bad line
 * is reported with the file it is in.
 */
import { execFileSync, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { run, scratchDir, start, startServeAgents, waitFor, type ServerProcess } from "./support/processes.js";

let server: ServerProcess;
beforeAll(async () => {
  server = await startServeAgents("test/fixtures/agents/shapes.js");
});
afterAll(async () => {
  await server?.stop();
});

const merge = (left: string, right: string, stdin?: string) =>
  run(["invoke", "shapes", "merge", "-a", "shapes", "-c", "{}", "--no-progress", left, right], {
    env: server.env,
    ...(stdin === undefined ? {} : { stdin }),
  });

function file(name: string, contents: string | Buffer): string {
  const path = join(scratchDir(), name);
  writeFileSync(path, contents);
  return path;
}

describe("two stream parameters", () => {
  it("one fed from a file, the other from stdin, or both from files", async () => {
    const left = file("left.txt", "a\nb\n");
    const mixed = await merge(left, "-", "c\n");
    expect(mixed.stderr).toBe("");
    expect(mixed.code).toBe(EXIT.success);
    expect(mixed.stdout.toString()).toBe("left a\nleft b\nright c\n");
    const files = await merge(left, file("right.txt", "d\r\ne"));
    expect(files.stdout.toString()).toBe("left a\nleft b\nright d\nright e\n");
  });

  it("stdin feeds one of them: a second - is refused, naming both parameters", async () => {
    const twice = await merge("-", "-");
    expect(twice.code).toBe(EXIT.usage);
    expect(twice.stderr).toBe("golem-stream: stdin is already bound to left; only one - is possible: give right a file to read\n");
  });

  it("a file that is missing or a directory is refused before anything is sent", async () => {
    const missing = await merge('["a"]', "-");
    expect(missing.code).toBe(EXIT.usage);
    expect(missing.stderr).toBe(
      'golem-stream: argument 1 (left) is a stream<string>, fed from - (stdin) or a file: cannot read ["a"] (no such file)\n',
    );
    const directory = scratchDir();
    const refused = await merge("-", directory);
    expect(refused.stderr).toBe(
      `golem-stream: argument 2 (right) is a stream<string>, fed from - (stdin) or a file: ${directory} is a directory\n`,
    );
  });

  it("a line that is no item is reported with the file it is in", async () => {
    const bad = file("bad.txt", Buffer.from([0x61, 0xff, 0x0a]));
    const result = await merge(file("good.txt", "a\n"), bad);
    expect(result.code).toBe(EXIT.invocationFailed);
    expect(result.stderr).toContain(
      `golem-stream: reading ${bad} failed, the input stream was cancelled: ${bad} line 1 is not valid UTF-8\n`,
    );
  });

  it("a FIFO is read as a pipe: one whose writer comes later is waited for, and one whose writer is silent does not hold the run at Ctrl-C", async () => {
    const late = join(scratchDir(), "late.fifo");
    execFileSync("mkfifo", [late]);
    // The writer opens the FIFO only after the CLI has (an open for writing waits for a reader).
    const writer = spawn("sh", ["-c", 'printf "b\\n" > "$0"', late]);
    const written = new Promise((resolve) => writer.once("exit", resolve));
    const fed = await merge(file("left.txt", "a\n"), late);
    expect(fed.stderr).toBe("");
    expect(fed.stdout.toString()).toBe("left a\nright b\n");
    expect(await written).toBe(0);

    const silent = join(scratchDir(), "silent.fifo");
    execFileSync("mkfifo", [silent]);
    // Holds the FIFO open and writes nothing: the CLI's read of it waits for ever.
    const holder = spawn("sh", ["-c", 'exec 3>"$0"; exec sleep 600', silent]);
    try {
      const cli = start(["invoke", "shapes", "merge", "-a", "shapes", "-c", "{}", "--no-progress", file("left.txt", "a\n"), silent], {
        env: server.env,
      });
      await waitFor(cli, () => cli.stdout().toString() === "left a\n", "the left file's line was printed");
      cli.child.kill("SIGINT");
      // A read blocked in libuv's thread pool had held the process at its exit until the writer wrote or closed.
      const interrupted = await cli.done;
      expect(interrupted.code).toBe(EXIT.interrupted);
      expect(interrupted.stderr).toBe("golem-stream: interrupted; the invocation was cancelled\n");
    } finally {
      holder.kill("SIGKILL");
    }
  });

  it("Ctrl-C with --checkpoint says resume cannot feed the file either, naming it", async () => {
    const left = file("left.txt", "a\n");
    const checkpoint = join(scratchDir(), "merge.ckpt");
    // `right` is stdin, left open: the invocation runs on after it printed `left a`.
    const cli = start(["invoke", "shapes", "merge", "-a", "shapes", "-c", "{}", "--no-progress", left, "-", "--checkpoint", checkpoint], {
      env: server.env,
      openStdin: true,
    });
    await waitFor(cli, () => cli.stdout().toString() === "left a\n", "the left file's line was printed");
    cli.child.kill("SIGINT");
    const interrupted = await cli.done;
    expect(interrupted.code).toBe(EXIT.interrupted);
    expect(interrupted.stderr).toContain(
      `continues its output, but not its input: left reads ${left}, right reads stdin, which resume cannot feed again, so unless`,
    );
  });
});

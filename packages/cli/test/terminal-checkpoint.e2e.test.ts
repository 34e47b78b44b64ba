/**
 * A stream's end is the run's to print and report before the checkpoint records its terminal
 * cursor (protocol 6.5: the cursor is retained "only after the language-level consumer observes
 * completion, error, or cancellation"; 13: "A crash can replay but cannot skip output"). The
 * cursor tokens do not say how a stream ended, so a `resume` of a checkpoint holding the
 * terminal prints nothing of it: a run killed right after that write, before it reported the
 * stream's error, lost the error, and its resume exited 0. Real processes: the CLI kills itself
 * with SIGKILL right after the checkpoint with the terminal cursor is on disk (a preload).
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT } from "../src/exit-codes.js";
import { itemsOf, lines, run, scratchDir, startServer } from "./support/processes.js";
import type { ServerProcess } from "./support/processes.js";

const KILL_AFTER_TERMINAL = fileURLToPath(new URL("./fixtures/preload/kill-after-terminal-checkpoint.cjs", import.meta.url));
const ME = ["-c", '{"name":"terminal"}'];

let server: ServerProcess;
beforeAll(async () => {
  server = await startServer(join(scratchDir(), "data"));
});
afterAll(async () => {
  await server.stop();
});

/** `fail 2` with a checkpoint written after every event, killed once it holds the terminal cursor. */
async function killedAtTheTerminal(extra: readonly string[] = []) {
  const checkpoint = join(scratchDir(), "run.ckpt");
  const args = ["invoke", "echo", "fail", ...ME, "2", "--checkpoint", checkpoint, "--checkpoint-interval", "0", ...extra];
  const killed = await run(args, { env: { ...server.env, NODE_OPTIONS: `--require=${KILL_AFTER_TERMINAL}` } });
  expect(killed.signal).toBe("SIGKILL");
  expect(killed.stderr).toContain("preload: the checkpoint holds a terminal cursor");
  return { killed, checkpoint };
}

describe("a stream's error end reaches the user before its terminal cursor reaches the checkpoint", () => {
  it("the error is reported on stderr before the kill; resume then has nothing left of the stream", async () => {
    const { killed, checkpoint } = await killedAtTheTerminal();
    expect(itemsOf(killed.stdout, "$")).toEqual([0, 1]);
    const report = killed.stderr.indexOf("golem-stream: stream $ ended with an error (producer-error): producer failed\n");
    expect(report).toBeGreaterThanOrEqual(0);
    expect(report).toBeLessThan(killed.stderr.indexOf("preload:"));
    const resumed = await run(["resume", checkpoint], { env: server.env });
    expect(resumed.stdout.length).toBe(0);
    expect(resumed.stderr).toMatch(/nothing left to print/);
    expect(resumed.code).toBe(EXIT.success);
  });

  it("--output json: the end event with its error outcome is printed before the kill", async () => {
    const { killed } = await killedAtTheTerminal(["--output", "json"]);
    const events = lines(killed.stdout).map((line) => JSON.parse(line) as { event: string; outcome?: unknown });
    expect(events.filter((event) => event.event === "item")).toHaveLength(2);
    expect(events.find((event) => event.event === "end")?.outcome).toEqual({
      kind: "error",
      code: "producer-error",
      message: "producer failed",
    });
  });
});

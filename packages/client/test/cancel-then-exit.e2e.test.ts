/**
 * `await call.cancel()` resolving `delivered`, then the process exiting at
 * once (what a CLI does on Ctrl-C): the server must have the cancellations.
 * A real child process (the built package) cancels a `count` whose output it
 * has not read, so the server is still sending, and exits in the same turn.
 * Before `delivered` waited for the server's close frame, the `streamCancel`
 * was still in the process's own buffers (or lost to the reset that unread
 * input provokes), and the invocation ran on to its end.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type ResumeState } from "../src/index.js";
import { demo, firstStream, record, u32 } from "./support/demo.js";
import { startServer, TOKEN } from "./support/embedded.js";

let server: Awaited<ReturnType<typeof startServer>>;
beforeAll(async () => void (server = await startServer()));
afterAll(async () => server.dispose());

const ITEMS = 100_000;

/** The child: start `count`, let output pile up unread, cancel, print the outcome and the state, exit in the same turn. */
const CHILD = `
import { createClient } from ${JSON.stringify(fileURLToPath(new URL("../dist/index.js", import.meta.url)))};
const [url, token, demo] = [process.env.URL, process.env.TOKEN, JSON.parse(process.env.DEMO)];
const call = createClient({ url, token }).invoke({ ...demo, method: "count", methodParameters: JSON.parse(process.env.PARAMS) });
await call.result;
await new Promise((resolve) => setTimeout(resolve, 50)); // output in flight, none of it read
const state = call.state;
const outcome = await call.cancel();
process.stdout.write(JSON.stringify({ outcome: outcome.kind, state }));
process.exit(0);
`;

function runChild(): Promise<{ outcome: string; state: ResumeState }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--input-type=module", "-e", CHILD], {
      env: { ...process.env, URL: server.url, TOKEN, DEMO: JSON.stringify(demo), PARAMS: JSON.stringify(record(u32(ITEMS), u32(1))) },
      stdio: ["ignore", "pipe", "inherit"],
    });
    const out: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve(JSON.parse(Buffer.concat(out).toString("utf8"))) : reject(new Error(`child exited ${code}`)),
    );
  });
}

describe("a process that exits as soon as cancel() resolves", () => {
  it("delivered means the server has the cancellations: the output ends cancelled, the invocation finishes", async () => {
    const { outcome, state } = await runChild();
    expect(outcome).toBe("delivered");
    // Another client takes the session over and reads the output from its start.
    const second = createClient({ url: server.url, token: TOKEN }).takeover(state);
    const stream = await firstStream(second);
    let items = 0;
    let end: unknown;
    try {
      for await (const _ of stream.values()) {
        // A cancel that arrived ends the stream within a few items; one that was lost leaves it running on.
        if (++items > 5_000) break;
      }
    } catch (error) {
      end = error;
    }
    expect(items, "the count ran on: the cancel never reached the server").toBeLessThanOrEqual(5_000);
    expect(end).toMatchObject({ kind: "stream-cancelled", reason: "cancelled" });
    expect(await second.finished).toEqual({ kind: "success" });
  });
});

/**
 * `invoke --checkpoint FILE` claims FILE when it starts: of two invocations given the same file,
 * only one may write it, or the later one replaces the other's checkpoint and that invocation can
 * never be resumed. An invocation that stops before its first checkpoint was written gives the
 * file back, so trying again works.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTcpProxy } from "@golem-stream/test-support";
import type { TcpProxy } from "@golem-stream/test-support";
import { EXIT } from "../src/exit-codes.js";
import { itemsOf, run, scratchDir, start, startServer } from "./support/processes.js";
import type { Running, ServerProcess } from "./support/processes.js";

const ME = ["-c", '{"name":"claim"}'];
let server: ServerProcess;

beforeAll(async () => {
  server = await startServer(join(scratchDir(), "data"));
});
afterAll(async () => {
  await server?.stop();
});

function countWith(checkpoint: string): string[] {
  return ["invoke", "echo", "count", ...ME, "3", "0", "--checkpoint", checkpoint];
}

/**
 * `invoke --checkpoint` through a proxy that holds every request: it waits in its catalogue
 * request, past its check of the checkpoint's path and before its first checkpoint write.
 */
async function heldInvoke(checkpoint: string): Promise<{ readonly held: Running; readonly proxy: TcpProxy }> {
  const proxy = await startTcpProxy({ upstream: server.url, plan: () => ({ holdRequest: true }) });
  const held = start(countWith(checkpoint), { env: { ...server.env, GOLEM_STREAM_URL: proxy.origin } });
  await proxy.until(() => proxy.connections.length > 0);
  return { held, proxy };
}

describe("invoke --checkpoint FILE claims FILE", () => {
  it("refuses FILE while another invocation holds it; that one gives it back when interrupted before it started", async () => {
    const checkpoint = join(scratchDir(), "shared.ckpt");
    const { held, proxy } = await heldInvoke(checkpoint);
    try {
      const second = await run(countWith(checkpoint), { env: server.env });
      expect(second.stderr).toMatch(/^golem-stream: --checkpoint \S+ is empty: another invocation claimed it/);
      expect(second.code).toBe(EXIT.usage);
      expect(second.stdout.length).toBe(0);
      held.child.kill("SIGINT");
      const interrupted = await held.done;
      expect(interrupted.code).toBe(EXIT.interrupted);
      expect(existsSync(checkpoint)).toBe(false);
    } finally {
      await proxy.close();
    }
    const retry = await run(countWith(checkpoint), { env: server.env });
    expect(retry.code, retry.stderr).toBe(EXIT.success);
    expect(itemsOf(retry.stdout, "$")).toEqual([0, 1, 2]);
    expect(readFileSync(checkpoint, "utf8")).toMatch(/"sessionToken":"gai1_/);
    expect(statSync(checkpoint).mode & 0o777).toBe(0o600);
  });

  it("a file left empty by an invocation killed before it started is refused with a message that says so", async () => {
    const checkpoint = join(scratchDir(), "left.ckpt");
    const { held, proxy } = await heldInvoke(checkpoint);
    try {
      held.child.kill("SIGKILL");
      await held.done;
    } finally {
      await proxy.close();
    }
    const retry = await run(countWith(checkpoint), { env: server.env });
    expect(retry.code).toBe(EXIT.usage);
    expect(retry.stderr).toBe(
      `golem-stream: --checkpoint ${checkpoint} is empty: another invocation claimed it and has not written it yet, ` +
        "or one stopped before it did; delete the file if no other `golem-stream invoke` uses it\n",
    );
  });

  it("resume of a file left empty by an invocation killed before it started says what it is, and that it can be deleted", async () => {
    const checkpoint = join(scratchDir(), "left-resume.ckpt");
    const { held, proxy } = await heldInvoke(checkpoint);
    try {
      held.child.kill("SIGKILL");
      await held.done;
    } finally {
      await proxy.close();
    }
    const resumed = await run(["resume", checkpoint], { env: server.env });
    expect(resumed.code).toBe(EXIT.usage);
    expect(resumed.stderr).toBe(
      `golem-stream: ${checkpoint} is empty: another invocation claimed it and has not written it yet, or one stopped before it did, ` +
        "so no invocation was started from it; delete the file if no other `golem-stream invoke` uses it, and run the invocation again\n",
    );
    expect(resumed.stdout.length).toBe(0);
  });

  it.each([
    ["a directory", () => scratchDir(), /^golem-stream: --checkpoint \S+ is a directory: give the name of a file to create in it\n$/],
    ["a path ending in /", () => `${scratchDir()}/`, /^golem-stream: --checkpoint \S+ names a directory: give the name of a file\n$/],
    [
      "a device",
      () => "/dev/null",
      /^golem-stream: --checkpoint \/dev\/null is not a regular file \(a device, FIFO or socket\): give the name of a file that does not exist yet\n$/,
    ],
    ["an empty path", () => "", /^golem-stream: --checkpoint is an empty path: give the name of the file to write\n$/],
  ])("refuses %s as FILE, saying what it is, and never advises deleting or resuming it", async (_, path, message) => {
    const refused = await run(countWith(path()), { env: server.env });
    expect(refused.code).toBe(EXIT.usage);
    expect(refused.stderr).toMatch(message);
    expect(refused.stdout.length).toBe(0);
  });

  it.each([
    ["an unknown method", ["invoke", "echo", "nope", ...ME]],
    ["a missing argument", ["invoke", "echo", "count", ...ME, "3"]],
    ["a server that does not answer", ["invoke", "echo", "count", ...ME, "3", "0", "--url", "http://127.0.0.1:1", "--retries", "0"]],
  ])("gives FILE back when the invocation cannot start: %s", async (_, args) => {
    const checkpoint = join(scratchDir(), "failed.ckpt");
    const failed = await run([...args, "--checkpoint", checkpoint], { env: server.env });
    expect(failed.code).not.toBe(EXIT.success);
    expect(existsSync(checkpoint)).toBe(false);
  });
});

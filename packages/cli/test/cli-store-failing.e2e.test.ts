/**
 * What the CLI says when the server is there but its store fails: the server answers every start
 * with a retryable `internal-error`. The server runs in this process (its store wrapped so
 * `createSession` throws); the CLI is the real executable. It must not call the server
 * unreachable, and when it gives up it must say that nothing was started.
 */
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { SqliteSessionStore, startEmbeddedServer } from "@golem-stream/server";
import type { EmbeddedServer } from "@golem-stream/server";
import { EXIT } from "../src/exit-codes.js";
import { failureOf } from "../src/output/exit-status.js";
import { ClientError } from "@golem-stream/client";
import { ProtocolError } from "@golem-stream/wire";
import { TOKEN, itemsOf, run, scratchDir } from "./support/processes.js";

const servers: EmbeddedServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** A server whose store fails the first `failures` session creations (like a full disk would). */
async function serverFailingStarts(failures: number): Promise<EmbeddedServer> {
  const dataDir = join(scratchDir(), "data");
  const inner = new SqliteSessionStore({ dataDir });
  let failed = 0;
  const store = new Proxy(inner, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property);
      if (typeof value !== "function") return value;
      if (property === "createSession") {
        return async (...args: unknown[]) => {
          if (failed++ < failures) throw new Error("disk I/O error");
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return (value as (...a: unknown[]) => unknown).bind(target);
    },
  });
  const server = await startEmbeddedServer({ dataDir, tokens: [TOKEN], store });
  servers.push(server);
  return server;
}

const invoke = (server: EmbeddedServer, ...extra: string[]) =>
  run(["invoke", "echo", "count", "-c", '{"name":"store"}', "3", "0", ...extra], {
    env: { GOLEM_STREAM_URL: server.httpUrl, GOLEM_STREAM_TOKEN: TOKEN },
  });

it("a server refusing every start with internal-error is reachable: giving up says nothing was started", async () => {
  const server = await serverFailingStarts(Number.POSITIVE_INFINITY);
  const failed = await invoke(server, "--retries", "2");
  expect(failed.code, failed.stderr).toBe(EXIT.connectionLost);
  expect(failed.stderr).not.toMatch(/cannot reach|connection lost/);
  expect(failed.stderr).toMatch(
    /^golem-stream: the server answered with an error that may pass \(internal-error\); retrying quietly, up to 2 times \(--retries\)\n/,
  );
  expect(failed.stderr).toMatch(
    /the server is reachable but kept refusing with an error that may pass; gave up after 2 reconnect attempts .*internal-error.*\. Nothing was started on the server \(a refused start runs nothing\): run the command again once the server is healthy\n$/,
  );
});

it("a start refused once and then accepted runs to its end, and says the server accepted", async () => {
  const server = await serverFailingStarts(1);
  const done = await invoke(server);
  expect(done.code, done.stderr).toBe(EXIT.success);
  expect(itemsOf(done.stdout, "$")).toEqual([0, 1, 2]);
  expect(done.stderr).toBe(
    "golem-stream: the server answered with an error that may pass (internal-error); retrying quietly, up to 10 times (--retries)\ngolem-stream: the server accepted on a later attempt\n",
  );
});

it("an invocation that fails without a reason after the server answered an error does not guess a restart", () => {
  const failure = failureOf(new ClientError("invocation-failed", "invocation failed", { code: "invocation-failed" }), {
    wasAway: false,
    serverError: "internal-error",
  });
  expect(failure.message).not.toMatch(/restart/);
  expect(failure.message).toMatch(/before, it had answered this process with internal-error, so it may be failing/);
});

it("giving up after a start went unanswered says the server may have started it, and names resume when there is a checkpoint", () => {
  const gaveUp = new ClientError(
    "connection-lost",
    "gave up after 2 reconnect attempts without progress (last: internal-error: internal error)",
    {
      cause: new ProtocolError("internal-error", "internal error"),
    },
  );
  expect(failureOf(gaveUp, { started: "unknown", checkpoint: "run.ckpt" }).message).toMatch(
    /may have started the invocation: `golem-stream resume run\.ckpt` continues it$/,
  );
  expect(failureOf(gaveUp, { started: "unknown" }).message).toMatch(/without a checkpoint nothing can continue it$/);
});

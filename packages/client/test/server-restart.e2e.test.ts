/**
 * The server process goes away and comes back on the same port and data
 * directory: the client retries through the refused connections, resumes,
 * and reports what the durable session says happened. `count` is replayable
 * (the server's docs/durable-execution.md): the restarted server runs it
 * again and the call ends in success with every item once.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { startEmbeddedServer } from "@golem-stream/server";
import { createClient } from "../src/index.js";
import { demo, firstStream, record, u32 } from "./support/demo.js";
import { TOKEN } from "./support/embedded.js";

it("reconnects through a server restart; a replayable call then finishes with every item exactly once", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-restart-"));
  let server = await startEmbeddedServer({ port: 0, host: "127.0.0.1", dataDir, tokens: [TOKEN] });
  const port = Number(new URL(server.url).port);
  try {
    const client = createClient({ url: server.url, token: TOKEN, reconnect: { initialDelayMs: 20, maxDelayMs: 100, maxAttempts: 50 } });
    const reconnects: string[] = [];
    const call = client.invoke({ ...demo, method: "count", methodParameters: record(u32(60), u32(5)) });
    call.on("reconnecting", (event) => reconnects.push(event.cause));
    const stream = await firstStream(call);
    const seen: number[] = [];
    const reading = (async () => {
      try {
        for await (const item of stream.values()) seen.push(item.value as number);
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    while (seen.length < 5) await new Promise((resolve) => setTimeout(resolve, 5));
    await server.close();
    server = await startEmbeddedServer({ port, host: "127.0.0.1", dataDir, tokens: [TOKEN] });

    await expect(call.finished).resolves.toEqual({ kind: "success" });
    expect(await reading).toBeUndefined();
    expect(reconnects.length).toBeGreaterThan(0);
    expect(seen).toEqual(Array.from({ length: 60 }, (_, i) => i));
  } finally {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

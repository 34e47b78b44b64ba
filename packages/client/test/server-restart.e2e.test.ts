/**
 * The server process goes away and comes back on the same port and data
 * directory: the client retries through the refused connections, resumes,
 * and reports what the durable session says happened.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { startEmbeddedServer } from "@golem-stream/server";
import { createClient } from "../src/index.js";
import { demo, firstStream, record, u32 } from "./support/demo.js";
import { TOKEN } from "./support/embedded.js";

it("reconnects through a server restart; finished items stay delivered exactly once", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-restart-"));
  let server = await startEmbeddedServer({ port: 0, host: "127.0.0.1", dataDir, tokens: [TOKEN] });
  const port = Number(new URL(server.url).port);
  try {
    const client = createClient({ url: server.url, token: TOKEN, reconnect: { initialDelayMs: 20, maxDelayMs: 100, maxAttempts: 50 } });
    const reconnects: string[] = [];
    const call = client.invoke({ ...demo, method: "count", methodParameters: record(u32(1_000_000), u32(2)) });
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

    // The restarted server finishes interrupted invocations as failed (docs/protocol/server.md).
    await expect(call.finished).rejects.toMatchObject({ kind: "invocation-failed" });
    await reading;
    expect(reconnects.length).toBeGreaterThan(0);
    expect(seen).toEqual(Array.from({ length: seen.length }, (_, i) => i));
  } finally {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

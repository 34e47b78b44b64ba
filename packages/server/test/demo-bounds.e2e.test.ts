/**
 * The demo catalogue bounds what it allocates: `echo.blobs` declares its
 * `size` (at most the 16 MiB binary item limit) and `count` (at most
 * 65 536) in its schema, so a start asking for more is refused with
 * `validation-error` before the method runs. Without the bounds, the first
 * case below would allocate and fill 4 GiB synchronously.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_MAX_BLOB_BYTES, DEMO_MAX_BLOBS, demoBlob } from "../src/demo/index.js";
import { demoStart, RawClient, v } from "./helpers.js";
import { ALICE, startMemoryServer, type MemoryServer } from "./support/memory-server.js";

let running: MemoryServer;
beforeAll(async () => {
  running = await startMemoryServer({ metrics: true });
});
afterAll(() => running.close());

async function firstAnswer(count: number, size: number) {
  const client = await RawClient.connect(running.url, ALICE);
  client.send(demoStart("blobs", v.record(v.u32(count), v.u32(size))));
  const answer = await client.next();
  client.socket.close();
  return answer;
}

describe("echo.blobs", () => {
  it("refuses a size over 16 MiB before the method runs (validation-error, naming the bound)", async () => {
    const answer = await firstAnswer(1, 4_294_967_295);
    expect(answer).toMatchObject({ type: "invocationRejected", code: "validation-error", retryable: false });
    expect(answer.type === "invocationRejected" && answer.message).toMatch(/fields\[1\]: above the maximum 16777216/);
    expect(await firstAnswer(1, DEMO_MAX_BLOB_BYTES + 1)).toMatchObject({ code: "validation-error" });
  });

  it("refuses a count over 65 536", async () => {
    expect(await firstAnswer(4_294_967_295, 1)).toMatchObject({ type: "invocationRejected", code: "validation-error" });
    expect(await firstAnswer(DEMO_MAX_BLOBS + 1, 1)).toMatchObject({ code: "validation-error" });
  });

  it("serves a blob of exactly 16 MiB", async () => {
    const client = await RawClient.connect(running.url, ALICE);
    client.send(demoStart("blobs", v.record(v.u32(1), v.u32(DEMO_MAX_BLOB_BYTES))));
    const { messages } = await client.all();
    const blob = messages.find((m) => m.type === "output-binary");
    expect(blob?.type === "output-binary" && blob.payload.length).toBe(DEMO_MAX_BLOB_BYTES);
    expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
  });

  it("demoBlob itself refuses a size over the limit", () => {
    expect(() => demoBlob(0, DEMO_MAX_BLOB_BYTES + 1)).toThrow(RangeError);
  });
});

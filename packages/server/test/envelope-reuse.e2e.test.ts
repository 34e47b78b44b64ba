/**
 * Large binary output is sent from envelopes whose memory the server reuses
 * (`limits.maxPooledSendBytes`): a buffer goes back to the pool only after
 * its frame was written, so while the client reads in spurts and writes
 * queue behind its socket, every blob still arrives byte for byte.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { demoBlob } from "../src/demo/index.js";
import { RawClient, demoStart, startTestServer, v, type TestServer } from "./helpers.js";

let server: TestServer;
beforeAll(async () => {
  // Room for about four envelopes: reuse starts with the fifth blob.
  server = await startTestServer({ limits: { maxPooledSendBytes: 1024 * 1024 } });
});
afterAll(async () => {
  await server.dispose();
});

it("blobs of 64 KiB and more arrive byte for byte while the client reads in spurts", async () => {
  const count = 40;
  const sizes = (i: number): number => [200 * 1024, 64 * 1024, 250 * 1024 - 1][i % 3] as number;
  for (const size of [sizes(0), sizes(1), sizes(2)]) {
    const client = await RawClient.connect(server.url);
    const spurts = setInterval(() => (client.socket.isPaused ? client.socket.resume() : client.socket.pause()), 3);
    client.send(demoStart("blobs", v.record(v.u32(count), v.u32(size))));
    const { messages, closed } = await client.all();
    clearInterval(spurts);
    expect(closed.code).toBe(1000);
    const blobs = messages.flatMap((m) => (m.type === "output-binary" ? [m] : []));
    expect(blobs.map((blob) => blob.sequence)).toEqual(Array.from({ length: count }, (_, i) => BigInt(i)));
    // Compared as bytes (Buffer.equals), not with a deep equality that walks every element.
    const wrong = blobs.flatMap((blob, i) => (Buffer.from(blob.payload).equals(demoBlob(i, size)) ? [] : [i]));
    expect(wrong).toEqual([]);
  }
});

/**
 * A cancel behind input the server has stopped reading, as a library user
 * meets it: the agent takes its input far slower than the client sends it,
 * so the server stops reading the connection (protocol 12) with megabytes
 * still in the socket, and the cancellations the client then sends sit
 * behind them. Their close goes unanswered; the client carries them over a
 * new connection, where the server reads them first
 * (docs/protocol/client.md §10a). Before, the cancel was reported
 * undelivered and the invocation ran on until it was given up.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, inputStream } from "../src/index.js";
import { TOKEN } from "./support/embedded.js";
import { PROBE, startProbeServer, type ProbeServer } from "./support/probe-server.js";
import { recording } from "./support/recording.js";

let probe: ProbeServer;
/** Resolves when the server stops reading a session socket because its inbound queue is full. */
let stoppedReading: () => void = () => undefined;
const serverStoppedReading = new Promise<void>((resolve) => (stoppedReading = resolve));
beforeAll(
  async () => void (probe = await startProbeServer([{ backpressure: (reason) => reason === "inbound-queue" && stoppedReading() }])),
);
afterAll(async () => probe.close());

/** Endless 64 KiB chunks, counting how many the client has pulled. */
function endlessChunks(): { source: AsyncIterable<Uint8Array>; pulled(): number } {
  let pulled = 0;
  return {
    source: (async function* () {
      for (;;) {
        pulled++;
        yield new Uint8Array(64 * 1024).fill(pulled & 0xff);
      }
    })(),
    pulled: () => pulled,
  };
}

describe("a cancel behind input the server has stopped reading", () => {
  it("goes over a new connection and is delivered; the invocation then ends on the server", async () => {
    const { transport, received } = recording();
    const chunks = endlessChunks();
    const client = createClient({ url: probe.url, token: TOKEN, transport, cancelConfirmTimeoutMs: 300 });
    const call = client.invoke({
      ...PROBE,
      method: "trickle",
      methodParameters: { kind: "record", value: { fields: [inputStream.bytes(chunks.source)] } },
    });
    await call.accepted;
    // The agent's queue (256 entries) and the server's inbound queue are full: the server stops
    // reading the socket, and what the client sends from now on waits in the socket's buffers.
    await serverStoppedReading;
    expect(chunks.pulled()).toBeGreaterThan(256);

    const accepted = () => received.filter((m) => m.type === "invocationAccepted").length;
    expect(await call.cancel()).toEqual({ kind: "delivered" });
    // The first connection's close went unanswered: a resume carried the cancellations.
    expect(accepted()).toBe(2);

    const second = createClient({ url: probe.url, token: TOKEN }).takeover(call.state!);
    // The agent's next read fails on the cancelled input, so the invocation ends (within its 1 s nap).
    await expect(second.finished).rejects.toMatchObject({ kind: "invocation-failed" });
  });
});

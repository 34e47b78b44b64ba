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
beforeAll(async () => void (probe = await startProbeServer()));
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

/** Resolves once `read()` has not changed for half a second: the client's input window is full. */
async function stalled(read: () => number): Promise<number> {
  let last = -1;
  for (let same = 0; same < 5; ) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const now = read();
    same = now === last ? same + 1 : 0;
    last = now;
  }
  return last;
}

describe("a cancel behind input the server has stopped reading", () => {
  it("goes over a new connection and is delivered; the invocation then ends on the server", async () => {
    const { transport, received } = recording();
    const chunks = endlessChunks();
    const client = createClient({ url: probe.url, token: TOKEN, transport, cancelConfirmTimeoutMs: 300 });
    const call = client.invoke({ ...PROBE, method: "trickle", methodParameters: { kind: "record", value: { fields: [inputStream.bytes(chunks.source)] } } });
    await call.accepted;
    // The agent's queue, the server's inbound queue and the socket's buffers are full.
    expect(await stalled(chunks.pulled)).toBeGreaterThan(256);

    const accepted = () => received.filter((m) => m.type === "invocationAccepted").length;
    expect(await call.cancel()).toEqual({ kind: "delivered" });
    // The first connection's close went unanswered: a resume carried the cancellations.
    expect(accepted()).toBe(2);

    const second = createClient({ url: probe.url, token: TOKEN }).takeover(call.state!);
    // The agent's next read fails on the cancelled input, so the invocation ends (within its 1 s nap).
    await expect(second.finished).rejects.toMatchObject({ kind: "invocation-failed" });
  });
});

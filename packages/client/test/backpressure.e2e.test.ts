/**
 * Output backpressure end to end (docs/protocol/client.md §7): a consumer that
 * stops reading makes the client stop reading the socket, so the real server
 * on loopback is held back by TCP and the client's queue stays at its bound.
 *
 * The queue is measured after every message the transport delivers (a
 * transport wrapped around `wsTransport()` — any `Transport` plugs in), not
 * at moments chosen by a timer, and the consumer stalls until the client has
 * actually paused, so the bound is always reached, however fast the machine.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, wsTransport, type Client, type Invocation, type Transport } from "../src/index.js";
import { demo, firstStream, record, u32 } from "./support/demo.js";
import { startServer, TOKEN } from "./support/embedded.js";

let server: Awaited<ReturnType<typeof startServer>>;
beforeAll(async () => void (server = await startServer()));
afterAll(async () => server.dispose());

/** `wsTransport()` plus a probe run after every delivered message, and a signal on every pause. */
function recordingTransport(afterMessage: () => void): { transport: Transport; nextPause(): Promise<void>; pauses(): number } {
  const inner = wsTransport();
  let pauses = 0;
  let waiter: (() => void) | undefined;
  const transport: Transport = {
    async connect(request, handlers) {
      const connection = await inner.connect(request, {
        onMessage: (message, wireBytes) => {
          handlers.onMessage(message, wireBytes);
          afterMessage();
        },
        onClose: (info) => handlers.onClose(info),
      });
      return {
        send: (message) => connection.send(message),
        pause: () => {
          pauses++;
          connection.pause();
          waiter?.();
          waiter = undefined;
        },
        resume: () => connection.resume(),
        close: (code, reason) => connection.close(code, reason),
      };
    },
  };
  return {
    transport,
    nextPause: () => new Promise((resolve) => (waiter = resolve)),
    pauses: () => pauses,
  };
}

interface Peaks {
  bytes: number;
  entries: number;
}

/** Reads the first stream of `call` in bursts: whenever the client paused, drain, then wait for the next pause (or the end). */
async function stallingConsumer(call: Invocation, recorder: ReturnType<typeof recordingTransport>): Promise<number> {
  const stream = await firstStream(call);
  const iterator = stream[Symbol.asyncIterator]();
  let received = 0;
  let ended = false;
  void stream.ended.then(() => (ended = true));
  for (;;) {
    if (!ended) await Promise.race([recorder.nextPause(), stream.ended]);
    // Take everything queued now; the client resumes reading as the queue drains.
    for (let queued = stream.queuedEntries; queued > 0; queued--) {
      if ((await iterator.next()).done) return received;
      received++;
    }
    if (ended && stream.queuedEntries === 0) {
      const last = await iterator.next();
      if (last.done) return received;
      received++;
    }
  }
}

describe("a consumer that stalls", () => {
  let client: Client;
  const peaks: Peaks = { bytes: 0, entries: 0 };
  let call: Invocation | undefined;
  const sample = (): void => {
    for (const stream of call?.streams ?? []) {
      peaks.bytes = Math.max(peaks.bytes, stream.queuedBytes);
      peaks.entries = Math.max(peaks.entries, stream.queuedEntries);
    }
  };

  it("bytes: the queue never holds more than maxQueuedBytes plus the message being read; 24 MiB still arrive whole", async () => {
    peaks.bytes = peaks.entries = 0;
    const recorder = recordingTransport(sample);
    const maxQueuedBytes = 2 * 1024 * 1024;
    const size = 256 * 1024;
    client = createClient({ url: server.url, token: TOKEN, transport: recorder.transport, maxQueuedBytes });
    call = client.invoke({ ...demo, method: "blobs", methodParameters: record(u32(96), u32(size)) });
    expect(await stallingConsumer(call, recorder)).toBe(96);
    await call.finished;
    expect(recorder.pauses()).toBeGreaterThanOrEqual(4); // the bound was reached again and again
    // Pausing happens as the bound is reached; what ws had already read may still arrive.
    expect(peaks.bytes).toBeGreaterThanOrEqual(maxQueuedBytes);
    expect(peaks.bytes).toBeLessThanOrEqual(maxQueuedBytes + 2 * (size + 1024));
  });

  it("entries: one stream pauses at maxQueuedEntriesPerStream; what it holds beyond is one socket read at most", async () => {
    peaks.bytes = peaks.entries = 0;
    const recorder = recordingTransport(sample);
    const maxQueuedEntriesPerStream = 16;
    client = createClient({ url: server.url, token: TOKEN, transport: recorder.transport, maxQueuedEntriesPerStream });
    call = client.invoke({ ...demo, method: "count", methodParameters: record(u32(2000), u32(0)) });
    expect(await stallingConsumer(call, recorder)).toBe(2000);
    await call.finished;
    expect(recorder.pauses()).toBeGreaterThanOrEqual(4);
    expect(peaks.entries).toBeGreaterThanOrEqual(maxQueuedEntriesPerStream);
    // Small messages: after the pause, ws still parses the rest of the socket read it holds (up to
    // 64 KiB), so the entry count overshoots by that many messages — but memory stays bounded:
    // 16 items plus one socket read, where the 2000 unpaused items would be about 800 KB.
    expect(peaks.bytes).toBeLessThanOrEqual(128 * 1024);
  });
});

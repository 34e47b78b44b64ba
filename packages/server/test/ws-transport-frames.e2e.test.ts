/**
 * The server's transport frames small text messages itself (wire's
 * `TextFrameBurst`) and sends everything else through `ws`: on loopback, a
 * `ws` client reads every message of a mixed burst in the order it was
 * sent, a burst closed in the same tick arrives before the close frame, and
 * above the high-water mark a sender waits for its message's write.
 */
import type { Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import { decodeServerMessage, type ServerMessage } from "@golem-stream/wire";
import { SENT } from "../src/transport/transport.js";
import { WsTransport } from "../src/transport/ws-transport.js";
import { stringOutputItem } from "@golem-stream/test-support";

let server: WebSocketServer | undefined;
afterEach(async () => {
  for (const client of server?.clients ?? []) client.terminate();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

interface Pair {
  readonly transport: WsTransport;
  /** What the client read, decoded, in order, and the close code it saw. */
  readonly received: ServerMessage[];
  readonly closed: Promise<number>;
  readonly client: WebSocket;
}

async function connect(highWaterBytes = 1 << 20, watchWrites?: (stream: Socket) => void): Promise<Pair> {
  server = new WebSocketServer({ port: 0, host: "127.0.0.1", perMessageDeflate: false });
  await new Promise((resolve) => server!.once("listening", resolve));
  const accepted = new Promise<WsTransport>((resolve) =>
    server!.once("connection", (socket: WebSocket & { _socket: Socket }) => {
      watchWrites?.(socket._socket);
      resolve(new WsTransport(socket, highWaterBytes, socket._socket));
    }),
  );
  const client = new WebSocket(`ws://127.0.0.1:${(server.address() as { port: number }).port}`, { perMessageDeflate: false });
  const received: ServerMessage[] = [];
  client.on("message", (data: Buffer, isBinary) => received.push(decodeServerMessage(new Uint8Array(data), isBinary)));
  const closed = new Promise<number>((resolve) => client.once("close", (code) => resolve(code)));
  await new Promise((resolve) => client.once("open", resolve));
  return { transport: await accepted, received, closed, client };
}

const ack = (n: number): ServerMessage => ({
  type: "inputStreamAck",
  channel: 1,
  highestContiguousSequence: BigInt(n),
  mappings: [],
  terminal: false,
});

/** ACKs and small items, items too large to be framed by the transport (ws frames them), binary batches: one tick. */
function mixedBurst(): ServerMessage[] {
  const messages: ServerMessage[] = [];
  for (let i = 0; i < 3_000; i++) {
    if (i % 700 === 350) messages.push(stringOutputItem(i, "large ".repeat(4_000)));
    else if (i % 500 === 250)
      messages.push({ type: "output-u8", channel: 3, sequence: BigInt(i), cursorToken: `c${i}`, payload: new Uint8Array(3_000).fill(i) });
    else if (i % 3 === 0) messages.push(ack(i));
    else messages.push(stringOutputItem(i, `item ${i} ${"€".repeat(i % 50)}`));
  }
  return messages;
}

/** A turn of the event loop: the transport writes its burst at the end of the tick. */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe("the server's own text frames on loopback", () => {
  it("reach the client in the order they were sent, mixed with what ws frames, and before a close in the same tick", async () => {
    const { transport, received, closed } = await connect();
    const burst = mixedBurst();
    for (const message of burst) expect(transport.send(message)).toBe(SENT);
    transport.close(1000, "done");
    expect(await closed).toBe(1000);
    expect(received).toEqual(burst);
  });

  it("above the high-water mark, has the sender wait for its message's write, in order after the frames before it", async () => {
    const { transport, received, closed } = await connect(64 * 1024);
    // The first messages are framed and go on at once. Sent in one tick, they fill the kernel's
    // buffers, then the socket's queue past the mark, and from there each waits for ws's callback.
    const burst: ServerMessage[] = [];
    const results: (Promise<void> | typeof SENT)[] = [];
    let waited = 0;
    for (let i = 0; waited < 100 && i < 400_000; i++) {
      burst.push(stringOutputItem(i, "x".repeat(200)));
      results.push(transport.send(burst[i]!));
      if (results[i] !== SENT) waited++;
    }
    expect(results[0]).toBe(SENT);
    expect(waited).toBe(100);
    await Promise.all(results);
    transport.close(1000, "done");
    expect(await closed).toBe(1000);
    expect(received).toEqual(burst);
  });

  it("hands a socket that still holds bytes copies of its bursts, not views that would keep the shared slab alive", async () => {
    const writes: { bytes: Uint8Array; queuedBefore: number }[] = [];
    const { transport, received, closed, client } = await connect(64 << 20, (stream) => {
      const write = stream.write.bind(stream) as (chunk: Uint8Array) => boolean;
      (stream as { write: (chunk: Uint8Array) => boolean }).write = (chunk) => {
        writes.push({ bytes: chunk, queuedBefore: stream.writableLength });
        return write(chunk);
      };
    });
    // The client stops reading: once the kernel's buffers are full, the server's socket queues.
    const tcp = (client as unknown as { _socket: Socket })._socket;
    tcp.pause();
    const sent: ServerMessage[] = [];
    const queue = (count: number): void => {
      for (let i = 0; i < count; i++) {
        sent.push(stringOutputItem(sent.length, "y".repeat(1_000)));
        expect(transport.send(sent.at(-1)!)).toBe(SENT);
      }
    };
    // A burst of a few messages a turn, as a pump sends them, until the socket holds bytes for many turns.
    for (let turn = 0; writes.filter((write) => write.queuedBefore > 0).length < 20 && turn < 20_000; turn++) {
      queue(8);
      await nextTurn();
    }
    const backlogged = writes.filter((write) => write.queuedBefore > 0);
    expect(backlogged.length).toBe(20);
    for (const { bytes } of backlogged) expect(bytes.buffer.byteLength).toBe(bytes.length);
    // Before the backlog, the slab's own views went out.
    expect(writes[0]!.bytes.buffer.byteLength).toBeGreaterThan(writes[0]!.bytes.length);
    tcp.resume();
    transport.close(1000, "done");
    expect(await closed).toBe(1000);
    expect(received).toEqual(sent);
  });
});

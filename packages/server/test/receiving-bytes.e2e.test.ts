/**
 * `limits.maxReceivingBytesPerNode`: messages still arriving count, all
 * session sockets together, at their frames' announced lengths; past the
 * limit the socket receiving the most is closed with 1013, and a message that
 * arrives whole leaves the count. Without it, sockets that start large
 * messages and never finish them held up to `maxPayload` each.
 */
import { afterEach, expect, it } from "vitest";
import WebSocket from "ws";
import { SESSION_PATH, SUBPROTOCOL } from "@golem-stream/wire";
import { ALICE, startMemoryServer, type MemoryServer } from "./support/memory-server.js";
import { CLOSE_TRY_AGAIN_LATER } from "../src/transport/receiving-bytes.js";

const KiB = 1024;
const MiB = 1024 * KiB;

let running: MemoryServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

interface Sender {
  readonly socket: WebSocket;
  /** The close status the server sent, once it closed. */
  readonly closed: Promise<number>;
  /** Writes raw bytes on the connection, below `ws`'s sender. */
  write(bytes: Uint8Array): void;
}

async function open(url: string): Promise<Sender> {
  const socket = new WebSocket(`${url}${SESSION_PATH}`, [SUBPROTOCOL], { headers: { authorization: `Bearer ${ALICE}` } });
  await new Promise<void>((resolve, reject) => {
    socket.once("open", () => resolve());
    socket.once("error", reject);
  });
  socket.on("error", () => undefined);
  const closed = new Promise<number>((resolve) => socket.once("close", (code) => resolve(code)));
  const raw = (socket as unknown as { _socket: { write(bytes: Uint8Array): void } })._socket;
  return { socket, closed, write: (bytes) => raw.write(bytes) };
}

/** A final binary frame's header announcing `length` bytes, masked with a zero key (so the payload is sent as it is). */
function binaryHeader(length: number): Uint8Array {
  const header = Buffer.alloc(14);
  header[0] = 0x82;
  header[1] = 0x80 | 127;
  header.writeBigUInt64BE(BigInt(length), 2);
  return header;
}

it("past maxReceivingBytesPerNode the socket receiving the most is closed with 1013; a message that arrives whole leaves the count", async () => {
  // Messages of at most 1 MiB, so that the limit can be 2.5 MiB (at least twice the largest message).
  running = await startMemoryServer({
    limits: { maxBinaryMessageBytes: MiB, maxTextMessageBytes: MiB, maxReceivingBytesPerNode: 2.5 * MiB },
  });
  const url = running.url;
  const [a, b, c] = [await open(url), await open(url), await open(url)];
  // Each begins a message and sends only a little of it.
  a.write(binaryHeader(MiB));
  a.write(new Uint8Array(100));
  b.write(binaryHeader(900 * KiB));
  b.write(new Uint8Array(100));
  // 1 MiB + 900 KiB + 800 KiB announced: past 2.5 MiB. The largest goes.
  c.write(binaryHeader(800 * KiB));
  c.write(new Uint8Array(100));
  expect(await a.closed).toBe(CLOSE_TRY_AGAIN_LATER);
  expect(b.socket.readyState).toBe(WebSocket.OPEN);
  expect(c.socket.readyState).toBe(WebSocket.OPEN);

  // B's message arrives whole: it is a message now, not bytes being received (a binary message
  // first is the protocol's to refuse, with its own close status, not this limit's).
  b.write(new Uint8Array(900 * KiB - 100));
  expect(await b.closed).not.toBe(CLOSE_TRY_AGAIN_LATER);
  // 800 KiB + 1 MiB announced: within the limit, so D's message is read whole too.
  const d = await open(url);
  d.write(binaryHeader(MiB));
  d.write(new Uint8Array(MiB));
  expect(await d.closed).not.toBe(CLOSE_TRY_AGAIN_LATER);
  expect(c.socket.readyState).toBe(WebSocket.OPEN);
  c.socket.terminate();
});

it("a limit below twice the largest message is refused: one socket could never send it", async () => {
  await expect(
    startMemoryServer({ limits: { maxBinaryMessageBytes: MiB, maxTextMessageBytes: MiB, maxReceivingBytesPerNode: MiB } }),
  ).rejects.toThrow(/maxReceivingBytesPerNode must be at least twice the largest message/);
});

it("a frame announcing more than the largest message is refused by ws with 1009 (limit-exceeded), however far past the node's limit it announces", async () => {
  running = await startMemoryServer({
    limits: { maxBinaryMessageBytes: MiB, maxTextMessageBytes: MiB, maxReceivingBytesPerNode: 2.5 * MiB },
  });
  const sender = await open(running.url);
  sender.write(binaryHeader(300 * MiB));
  expect(await sender.closed).toBe(1009);
});

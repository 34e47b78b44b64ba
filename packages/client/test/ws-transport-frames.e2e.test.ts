/**
 * The ws transport frames small text messages itself (ws-text-frames.ts)
 * and sends everything else through `ws`: on loopback, a `ws` server reads
 * every message of a mixed burst in the order it was sent, a burst closed in
 * the same tick arrives before the close frame.
 */
import { afterEach, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import { SUBPROTOCOL, decodeClientMessage, type ClientMessage } from "@golem-stream/wire";
import type { Connection } from "../src/transport.js";
import { wsTransport } from "../src/ws-transport.js";

let server: WebSocketServer | undefined;
afterEach(async () => {
  for (const client of server?.clients ?? []) client.terminate();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

interface Peer {
  readonly connection: Connection;
  /** What the server read, decoded, in order; and the close code it saw once the socket closed. */
  readonly received: ClientMessage[];
  readonly closed: Promise<number>;
}

async function connect(): Promise<Peer> {
  const received: ClientMessage[] = [];
  let closedWith!: (code: number) => void;
  const closed = new Promise<number>((resolve) => (closedWith = resolve));
  server = new WebSocketServer({ port: 0, host: "127.0.0.1", maxPayload: 2 << 20, handleProtocols: () => SUBPROTOCOL });
  await new Promise((resolve) => server!.once("listening", resolve));
  server.on("connection", (peerSocket) => {
    peerSocket.on("message", (data: Buffer, isBinary) => received.push(decodeClientMessage(new Uint8Array(data), isBinary)));
    peerSocket.on("close", (code) => closedWith(code));
  });
  const url = `ws://127.0.0.1:${(server.address() as { port: number }).port}`;
  const connection = await wsTransport().connect(
    { url, token: "t", signal: new AbortController().signal },
    { onMessage: () => undefined, onClose: () => undefined },
  );
  return { connection, received, closed };
}

const item = (sequence: number, text: string): ClientMessage => ({
  type: "inputStreamItem",
  channel: 1,
  sequence: BigInt(sequence),
  value: { kind: "string", value: text },
});

/** Small items, an item too large to be framed by the transport (ws frames it), binary batches, a cancel: one tick. */
function mixedBurst(): ClientMessage[] {
  const messages: ClientMessage[] = [];
  for (let i = 0; i < 3_000; i++) {
    if (i % 700 === 350) messages.push(item(i, "large ".repeat(4_000)));
    else if (i % 500 === 250)
      messages.push({ type: "input-u8", channel: 2, sequence: BigInt(i), payload: new Uint8Array(3_000).fill(i & 0xff) });
    else messages.push(item(i, `item ${i} ${"€".repeat(i % 50)}`));
  }
  messages.push({ type: "streamCancel", channel: 3, reason: "cancelled" });
  return messages;
}

describe("the ws transport's own text frames on loopback", () => {
  it("reach the server in the order they were sent, mixed with what ws frames, and before a close in the same tick", async () => {
    const peer = await connect();
    const burst = mixedBurst();
    for (const message of burst) peer.connection.send(message);
    peer.connection.close(1000, "bye");
    expect(await peer.closed).toBe(1000);
    expect(peer.received).toEqual(burst);
  });
});

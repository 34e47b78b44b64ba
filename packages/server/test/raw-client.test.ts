/**
 * The testing RawClient's `all({ within })`: a socket that never closes
 * fails after the deadline with what did arrive, so a hung scenario names
 * the stream that stopped instead of only timing out.
 */
import { encodeServerMessage } from "@golem-stream/wire";
import { afterEach, expect, it } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import { RawClient } from "../src/testing/index.js";

let server: WebSocketServer | undefined;
afterEach(() => new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve()))));

async function clientOf(send: (socket: WebSocket) => void): Promise<RawClient> {
  server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  server.on("connection", send);
  await new Promise((resolve) => server?.once("listening", resolve));
  const { port } = server.address() as { port: number };
  const socket = new WebSocket(`ws://127.0.0.1:${port}`);
  // Listening from the start: the server sends as soon as it has the connection.
  const client = new RawClient(socket);
  await new Promise((resolve) => socket.once("open", resolve));
  return client;
}

it("all({ within }) gives up with a summary of the messages received", async () => {
  const client = await clientOf((socket) => {
    for (const sequence of [0n, 1n, 2n]) {
      socket.send(encodeServerMessage({ type: "outputStreamItem", channel: 2, cursorToken: "t", mappings: [], sequence, value: { kind: "u32", value: 1 } }));
    }
    socket.send(encodeServerMessage({ type: "outputStreamEnd", channel: 2, cursorToken: "t", outcome: { kind: "ok" }, sequence: 3n }));
  });
  try {
    await client.waitFor((message) => message.type === "outputStreamEnd");
    await expect(client.all({ within: 50 })).rejects.toThrow(
      "the socket did not close within 50 ms; received: outputStreamItem channel 2 ×3 (sequence 0..2); outputStreamEnd channel 2 ×1 (sequence 3..3)",
    );
  } finally {
    client.terminate();
  }
});

it("all({ within }) resolves as usual when the socket closes in time", async () => {
  const client = await clientOf((socket) => socket.close(1000, "done"));
  await expect(client.all({ within: 5_000 })).resolves.toMatchObject({ messages: [], closed: { code: 1000 } });
});

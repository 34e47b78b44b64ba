/**
 * The testing RawClient's `all({ idleMs })`: a socket that goes silent
 * without closing fails with what did arrive, so a hung scenario names the
 * stream that stopped instead of only timing out; one that keeps sending
 * is never cut off, however long it takes in total.
 */
import { encodeServerMessage } from "@golem-stream/wire";
import { afterEach, expect, it, vi } from "vitest";
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

it("all({ idleMs }) gives up on a silent socket with a summary of the messages received", async () => {
  const client = await clientOf((socket) => {
    for (const sequence of [0n, 1n, 2n]) {
      socket.send(
        encodeServerMessage({
          type: "outputStreamItem",
          channel: 2,
          cursorToken: "t",
          mappings: [],
          sequence,
          value: { kind: "u32", value: 1 },
        }),
      );
    }
    socket.send(encodeServerMessage({ type: "outputStreamEnd", channel: 2, cursorToken: "t", outcome: { kind: "ok" }, sequence: 3n }));
  });
  try {
    await client.waitFor((message) => message.type === "outputStreamEnd");
    await expect(client.all({ idleMs: 50 })).rejects.toThrow(
      "the socket stayed silent for 50 ms without closing; received: outputStreamItem channel 2 ×3 (sequence 0..2); outputStreamEnd channel 2 ×1 (sequence 3..3)",
    );
  } finally {
    client.terminate();
  }
});

it("all({ idleMs }) resolves as usual when the socket closes", async () => {
  const client = await clientOf((socket) => socket.close(1000, "done"));
  await expect(client.all({ idleMs: 5_000 })).resolves.toMatchObject({ messages: [], closed: { code: 1000 } });
});

it("all({ idleMs }) waits for a stream that takes longer than idleMs in total while each message comes sooner", async () => {
  // The server sends one item per request; the test moves a fake clock 40 ms (under the 50 ms
  // bound) before asking for the next. Ten items take 400 ms of that clock in all: a bound on the
  // total would give up, a bound on silence must not.
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
  try {
    let sent = 0;
    const client = await clientOf((socket) => {
      socket.on("message", () => {
        if (sent === 10) socket.close(1000, "done");
        else
          socket.send(
            encodeServerMessage({
              type: "outputStreamItem",
              channel: 2,
              cursorToken: "t",
              mappings: [],
              sequence: BigInt(sent++),
              value: { kind: "u32", value: 1 },
            }),
          );
      });
    });
    client.socket.on("message", () => {
      vi.advanceTimersByTime(40);
      client.socket.send("next");
    });
    const all = client.all({ idleMs: 50 });
    client.socket.send("next");
    const { messages, closed } = await all;
    expect(messages).toHaveLength(10);
    expect(closed.code).toBe(1000);
  } finally {
    vi.useRealTimers();
  }
});

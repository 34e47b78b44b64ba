/**
 * The Node transport reads the server's small text frames itself, before
 * `ws` (wire's `readWsTextFramesFirst`), on
 * loopback: with the `ws` the lockfile holds the fast path is in use; a
 * server's mixed traffic (small and large output items, a fragmented message,
 * pings) reaches the handlers whole and in order, split between the two
 * readers; and a message read either way is a sign of life to the keepalive.
 */
import { afterEach, describe, expect, it } from "vitest";
import WebSocket, { WebSocketServer, type ClientOptions } from "ws";
import { encodeServerMessage, SUBPROTOCOL, type ServerMessage } from "@golem-stream/wire";
import { wsTransport } from "../src/index.js";
import { readWsTextFramesFirst } from "@golem-stream/wire/internal";
import { stringOutputItem } from "@golem-stream/test-support";

let peer: WebSocketServer | undefined;
afterEach(async () => {
  for (const client of peer?.clients ?? []) client.terminate();
  await new Promise((resolve) => (peer ? peer.close(resolve) : resolve(undefined)));
  peer = undefined;
});

async function startPeer(onConnection: (socket: WebSocket) => void, autoPong = true): Promise<string> {
  peer = new WebSocketServer({
    port: 0,
    host: "127.0.0.1",
    perMessageDeflate: false,
    autoPong,
    handleProtocols: (set) => (set.has(SUBPROTOCOL) ? SUBPROTOCOL : false),
  });
  await new Promise((resolve) => peer!.once("listening", resolve));
  peer.on("connection", onConnection);
  return `ws://127.0.0.1:${(peer.address() as { port: number }).port}`;
}

const request = (url: string) => ({ url: `${url}/v1/agents/invoke-agent-session`, token: "t", signal: new AbortController().signal });

describe("the server's small text frames, read before ws", () => {
  it("is in use with the ws release installed, and leaves a socket it cannot read alone", async () => {
    const stranger = { readyState: 1 } as unknown as WebSocket;
    expect(readWsTextFramesFirst(stranger, { maxPayloadBytes: 1024, masked: false, text: () => {} })).toBe(false);
    const url = await startPeer(() => {});
    const readFirst = (options: ClientOptions) => {
      const socket = new WebSocket(url, SUBPROTOCOL, options);
      return new Promise<boolean>((resolve) =>
        socket.once("open", () => {
          resolve(readWsTextFramesFirst(socket, { maxPayloadBytes: 1024, masked: false, text: () => {} }));
          socket.terminate();
        }),
      );
    };
    // Configured as the transport configures ws.
    expect(await readFirst({ perMessageDeflate: false, skipUTF8Validation: true, maxPayload: 1024 })).toBe(true);
    // ws's defaults check UTF-8 themselves (their own close code): ws reads alone.
    expect(await readFirst({})).toBe(false);
  });

  it("hands a server's mixed traffic to the handlers whole and in order", async () => {
    const sent: ServerMessage[] = [];
    const url = await startPeer((socket) => {
      for (let n = 0; n < 3000; n++) {
        if (n % 500 === 250) {
          // One message in two fragments, a ping between them.
          const text = encodeServerMessage(stringOutputItem(n, `fragmented-${n}`)) as string;
          socket.send(text.slice(0, 20), { fin: false });
          socket.ping();
          socket.send(text.slice(20), { fin: true });
        } else {
          // Now and then an item larger than a socket read: ws reads those.
          const message = stringOutputItem(n, n % 300 === 7 ? "x".repeat(100_000) : `item ${n} é ${"y".repeat(n % 150)}`);
          socket.send(encodeServerMessage(message) as string);
          sent.push(message);
          continue;
        }
        sent.push(stringOutputItem(n, `fragmented-${n}`));
      }
      socket.close(1000);
    });
    const received: ServerMessage[] = [];
    const closed = new Promise<number>((resolve) => {
      void wsTransport({ keepaliveIntervalMs: 0 }).connect(request(url), {
        onMessage: (message) => received.push(message),
        onClose: (info) => resolve(info.code),
      });
    });
    expect(await closed).toBe(1000);
    expect(received).toEqual(sent);
  });

  it("counts a small message read before ws as a sign of life: a server that never answers pings but keeps talking stays connected", async () => {
    const messages = 40;
    const url = await startPeer((socket) => {
      let n = 0;
      // One small item every 5 ms, while the client's keepalive pings every 50 ms and hears no pong.
      const timer = setInterval(() => {
        if (n === messages) {
          clearInterval(timer);
          socket.close(1000);
          return;
        }
        socket.send(encodeServerMessage(stringOutputItem(n, `tick ${n}`)) as string);
        n++;
      }, 5);
      socket.once("close", () => clearInterval(timer));
    }, false);
    const received: ServerMessage[] = [];
    const closed = new Promise<number>((resolve) => {
      void wsTransport({ keepaliveIntervalMs: 50 }).connect(request(url), {
        onMessage: (message) => received.push(message),
        onClose: (info) => resolve(info.code),
      });
    });
    expect(await closed).toBe(1000);
    expect(received).toHaveLength(messages);
  });
});

/**
 * The server reads a session socket's small text frames itself, before `ws`
 * (wire's `readWsTextFramesFirst`), on loopback: with the
 * `ws` the lockfile holds the fast path is in use; a client's mixed traffic
 * (small and large texts, binary, a fragmented message, pings) arrives whole
 * and in order, split between the two readers; a close frame or a frame
 * `ws` refuses ends what is read, as with `ws` alone.
 */
import { afterEach, describe, expect, it } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import { readWsTextFramesFirst } from "@golem-stream/wire/internal";
import { rawUpgrade } from "./support/raw-upgrade.js";

let server: WebSocketServer | undefined;
afterEach(async () => {
  for (const client of server?.clients ?? []) client.terminate();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

/** What the server read, in order: `fast` text read before ws, `text` and `binary` from ws's message event. */
interface Accepted {
  readonly received: string[];
  readonly fastPath: boolean;
  readonly closed: Promise<number>;
  /** The codes of the errors ws reported (a frame it refused). */
  readonly errors: string[];
}

/** A server configured as the session endpoint's `ws` (readWsTextFramesFirst relies on these options), reading small text frames first. */
async function listen(maxTextBytes = 1024): Promise<{ port: number; accepted: Promise<Accepted> }> {
  server = new WebSocketServer({
    port: 0,
    host: "127.0.0.1",
    perMessageDeflate: false,
    skipUTF8Validation: true,
    allowSynchronousEvents: true,
    maxPayload: 1 << 20,
  });
  await new Promise((resolve) => server!.once("listening", resolve));
  const accepted = new Promise<Accepted>((resolve) =>
    server!.once("connection", (socket: WebSocket) => {
      const received: string[] = [];
      socket.on("message", (data: Buffer, isBinary) => received.push(`${isBinary ? "binary" : "text"} ${data.toString("utf8")}`));
      const fastPath = readWsTextFramesFirst(socket, {
        maxPayloadBytes: maxTextBytes,
        masked: true,
        text: (payload) => received.push(`fast ${Buffer.from(payload).toString("utf8")}`),
      });
      const closed = new Promise<number>((done) => socket.once("close", (code) => done(code)));
      const errors: string[] = [];
      socket.on("error", (error: Error & { code?: string }) => errors.push(error.code ?? error.message));
      resolve({ received, fastPath, closed, errors });
    }),
  );
  return { port: (server.address() as { port: number }).port, accepted };
}

const withoutPath = (entry: string): string => entry.replace(/^(fast|text) /, "text ");

describe("a session socket's small text frames, read before ws", () => {
  it("is in use with the ws release installed, and leaves a socket it cannot read alone", () => {
    const stranger = { readyState: 1 } as unknown as WebSocket;
    expect(readWsTextFramesFirst(stranger, { maxPayloadBytes: 1024, masked: true, text: () => {} })).toBe(false);
  });

  it("reads a client's mixed traffic whole and in order, the small texts itself", async () => {
    const { port, accepted } = await listen();
    const client = new WebSocket(`ws://127.0.0.1:${port}`, { perMessageDeflate: false });
    await new Promise((resolve) => client.once("open", resolve));
    const { received, fastPath, closed } = await accepted;
    expect(fastPath).toBe(true);
    const sent: string[] = [];
    let pongs = 0;
    client.on("pong", () => pongs++);
    for (let i = 0; i < 3000; i++) {
      if (i % 500 === 250) {
        // A fragmented text with a ping between its fragments.
        client.send(`frag-${i}-a`, { fin: false });
        client.ping();
        client.send(`-b`, { fin: true });
        sent.push(`text frag-${i}-a-b`);
      } else if (i % 300 === 7) {
        const large = `large-${i}-${"x".repeat(2000)}`;
        client.send(large);
        sent.push(`text ${large}`);
      } else if (i % 200 === 3) {
        client.send(Buffer.from(`blob-${i}`), { binary: true });
        sent.push(`binary blob-${i}`);
      } else {
        client.send(`{"item":${i},"text":"é ${"y".repeat(i % 150)}"}`);
        sent.push(`text {"item":${i},"text":"é ${"y".repeat(i % 150)}"}`);
      }
    }
    client.close(1000);
    expect(await closed).toBe(1000);
    expect(received.map(withoutPath)).toEqual(sent);
    expect(received.filter((entry) => entry.startsWith("fast ")).length).toBeGreaterThan(2000);
    expect(pongs).toBe(6);
  });

  it("reads nothing after a close frame, nor after a frame ws refuses, in the same write", async () => {
    const frame = (first: number, text: string, masked = true): Buffer => {
      const payload = Buffer.from(text);
      const key = Buffer.from([1, 2, 3, 4]);
      const body = masked ? payload.map((byte, i) => byte ^ key[i % 4]!) : payload;
      return Buffer.concat([Buffer.from([first, (masked ? 0x80 : 0) | payload.length]), masked ? key : Buffer.alloc(0), body]);
    };
    const close1000 = Buffer.concat([Buffer.from([0x88, 0x82, 0, 0, 0, 0]), Buffer.from([0x03, 0xe8])]);
    for (const [bad, code, error] of [
      [close1000, 1000, []],
      [frame(0x81, "unmasked", false), 1002, ["WS_ERR_EXPECTED_MASK"]],
      [frame(0xc1, "reserved bit"), 1002, ["WS_ERR_UNEXPECTED_RSV_1"]],
    ] as const) {
      const { port, accepted } = await listen();
      const raw = rawUpgrade(`ws://127.0.0.1:${port}`);
      expect(await raw.status).toMatch(/ 101 /);
      raw.socket.write(Buffer.concat([frame(0x81, "one"), frame(0x81, "two"), bad, frame(0x81, "three"), frame(0x82, "four")]));
      const { received, errors } = await accepted;
      // The server's close frame: 1000 answers the client's, 1002 fails the connection.
      expect((await raw.frame(0x8)).payload.readUInt16BE(0)).toBe(code);
      expect(received).toEqual(["fast one", "fast two"]);
      // One error for the refused frame, none for what followed it (ws's receiver is never written after it ended).
      await new Promise((resolve) => setImmediate(resolve));
      expect(errors).toEqual(error);
      raw.socket.destroy();
      await new Promise((resolve) => server!.close(resolve));
      server = undefined;
    }
  });
});

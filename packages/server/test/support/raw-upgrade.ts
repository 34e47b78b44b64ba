/**
 * A WebSocket client written by hand on a bare TCP socket, for tests of
 * hostile and silent peers: it sends an opening handshake with the headers
 * a test chooses, then reads the server's frames without ever answering
 * one (no close frame back, no pong) unless the test writes it.
 */
import { randomBytes } from "node:crypto";
import { connect, type Socket } from "node:net";
import { SUBPROTOCOL } from "@golem-stream/wire";
import { upgradeRequest } from "@golem-stream/test-support";

export interface RawFrame {
  readonly opcode: number;
  readonly payload: Buffer;
}

export interface RawUpgrade {
  readonly socket: Socket;
  /** The status line of the server's answer (`HTTP/1.1 101 Switching Protocols`). */
  readonly status: Promise<string>;
  /** The server's frames, in order, as they arrive. */
  readonly frames: RawFrame[];
  /** Resolves with the first frame of `opcode` (0x8 close, 0x9 ping). */
  frame(opcode: number): Promise<RawFrame>;
  /** Resolves when the server has closed the TCP connection (FIN or reset). */
  readonly ended: Promise<void>;
  /** Sends one masked client frame. */
  send(opcode: number, payload: Uint8Array): void;
}

/** Opens `ws://host:port/v1/...` by hand with `protocols` and `headers`; the socket is never answered unless the test does. */
export function rawUpgrade(
  url: string,
  protocols: readonly string[] = [SUBPROTOCOL],
  headers: Readonly<Record<string, string>> = {},
): RawUpgrade {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  const frames: RawFrame[] = [];
  const waiters: { opcode: number; resolve: (frame: RawFrame) => void }[] = [];
  let buffered = Buffer.alloc(0);
  let upgraded = false;
  let resolveStatus: (line: string) => void = () => {};
  const status = new Promise<string>((resolve) => (resolveStatus = resolve));
  const ended = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.on("error", () => undefined);
  socket.write(
    upgradeRequest(`${hostname}:${port}`, [
      `Sec-WebSocket-Protocol: ${protocols.join(", ")}`,
      ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    ]),
  );
  socket.on("data", (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    if (!upgraded) {
      const end = buffered.indexOf("\r\n\r\n");
      if (end < 0) return;
      resolveStatus(buffered.subarray(0, buffered.indexOf("\r\n")).toString());
      upgraded = true;
      buffered = buffered.subarray(end + 4);
    }
    for (;;) {
      const frame = nextFrame(buffered);
      if (frame === undefined) return;
      buffered = buffered.subarray(frame.length);
      frames.push(frame.frame);
      for (const waiter of waiters.filter((w) => w.opcode === frame.frame.opcode)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(frame.frame);
      }
    }
  });
  return {
    socket,
    status,
    frames,
    ended,
    frame: (opcode) => {
      const seen = frames.find((f) => f.opcode === opcode);
      return seen !== undefined ? Promise.resolve(seen) : new Promise((resolve) => waiters.push({ opcode, resolve }));
    },
    send: (opcode, payload) => socket.write(maskedFrame(opcode, payload)),
  };
}

/** One unmasked server frame at the start of `data`, with its length, if complete (payloads under 64 KiB). */
function nextFrame(data: Buffer): { frame: RawFrame; length: number } | undefined {
  if (data.length < 2) return undefined;
  const opcode = data[0]! & 0x0f;
  let length = data[1]! & 0x7f;
  let offset = 2;
  if (length === 126) {
    if (data.length < 4) return undefined;
    length = data.readUInt16BE(2);
    offset = 4;
  } else if (length === 127) {
    throw new Error("raw-upgrade reads frames under 64 KiB only");
  }
  if (data.length < offset + length) return undefined;
  return { frame: { opcode, payload: data.subarray(offset, offset + length) }, length: offset + length };
}

function maskedFrame(opcode: number, payload: Uint8Array): Buffer {
  if (payload.length >= 126) throw new Error("raw-upgrade sends frames under 126 bytes only");
  const mask = randomBytes(4);
  const masked = Buffer.from(payload.map((byte, i) => byte ^ mask[i % 4]!));
  return Buffer.concat([Buffer.from([0x80 | opcode, 0x80 | payload.length]), mask, masked]);
}

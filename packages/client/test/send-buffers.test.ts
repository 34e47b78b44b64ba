/**
 * The envelope memory of large binary messages: reused only after release,
 * bounded while idle, never handed to two sends; and, through the `ws`
 * transport on loopback, every reused envelope carries exactly its message.
 */
import { afterEach, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import { SUBPROTOCOL, decodeClientMessage, type InputU8Batch } from "@golem-stream/wire";
import { SendBuffers } from "../src/send-buffers.js";
import { wsTransport } from "../src/ws-transport.js";

const KiB = 1024;

describe("SendBuffers", () => {
  it("reuses an envelope's memory only after it is released, dirty and at the requested length", () => {
    const pool = new SendBuffers(4 * 1024 * KiB);
    const first = pool.allocate(100 * KiB);
    expect(first.length).toBe(100 * KiB);
    first.fill(7);
    const second = pool.allocate(100 * KiB);
    expect(second.buffer).not.toBe(first.buffer);
    pool.release(first);
    const third = pool.allocate(90 * KiB);
    expect(third.buffer).toBe(first.buffer);
    expect(third.length).toBe(90 * KiB);
    expect(third[0]).toBe(7);
  });

  it("hands out the smallest idle buffer that fits, and a new one when none does", () => {
    const pool = new SendBuffers(8 * 1024 * KiB);
    const big = pool.allocate(1024 * KiB);
    const small = pool.allocate(100 * KiB);
    pool.release(big);
    pool.release(small);
    expect(pool.allocate(70 * KiB).buffer).toBe(small.buffer);
    expect(pool.allocate(70 * KiB).buffer).toBe(big.buffer);
    const fresh = pool.allocate(2048 * KiB);
    expect([big.buffer, small.buffer]).not.toContain(fresh.buffer);
  });

  it("keeps at most maxIdleBytes idle, and forgets what it drops", () => {
    const pool = new SendBuffers(1536 * KiB);
    const a = pool.allocate(1024 * KiB);
    const b = pool.allocate(1024 * KiB);
    pool.release(a);
    pool.release(b);
    expect(pool.idleBytes).toBe(1024 * KiB);
    expect(pool.owns(b)).toBe(false);
  });

  it("does not pool small envelopes, foreign memory, a second release, or anything with a bound of 0", () => {
    const pool = new SendBuffers(4 * 1024 * KiB);
    const small = pool.allocate(1000);
    expect(pool.owns(small)).toBe(false);
    pool.release(small);
    pool.release(new Uint8Array(128 * KiB));
    expect(pool.idleBytes).toBe(0);
    const big = pool.allocate(128 * KiB);
    pool.release(big);
    pool.release(big);
    expect(pool.idleBytes).toBe(128 * KiB);
    expect(pool.allocate(128 * KiB).buffer).toBe(big.buffer);
    expect(pool.allocate(128 * KiB).buffer).not.toBe(big.buffer);
    const off = new SendBuffers(0);
    expect(off.owns(off.allocate(1024 * KiB))).toBe(false);
  });

  it.each([-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])("refuses a bound of %s", (bound) => {
    expect(() => new SendBuffers(bound)).toThrow(RangeError);
  });
});

describe("the ws transport's reused envelopes", () => {
  let server: WebSocketServer | undefined;
  afterEach(async () => {
    for (const client of server?.clients ?? []) client.terminate();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    server = undefined;
  });

  it("deliver every batch byte for byte, sizes mixed, while the peer reads slowly", async () => {
    const received: InputU8Batch[] = [];
    const sizes = [1024 * KiB, 70 * KiB, 1024 * KiB - 1, 200 * KiB, 1, 1024 * KiB, 65 * KiB, 512 * KiB];
    const batches = Array.from({ length: 48 }, (_, i) => {
      const payload = new Uint8Array(sizes[i % sizes.length] as number);
      for (let j = 0; j < payload.length; j += 997) payload[j] = (i * 31 + j) & 0xff;
      payload[payload.length - 1] = i;
      return { type: "input-u8" as const, channel: 1 + (i % 3), sequence: BigInt(i) * 2_000_000n, payload };
    });
    const done = new Promise<void>((resolve) => {
      server = new WebSocketServer({ port: 0, host: "127.0.0.1", maxPayload: 2 * 1024 * KiB, handleProtocols: () => SUBPROTOCOL });
      server.on("connection", (socket) => {
        // Read in spurts, so the client's writes queue behind the socket and finish late.
        const tcp = (socket as unknown as { _socket: import("node:net").Socket })._socket;
        const spurts = setInterval(() => (tcp.isPaused() ? tcp.resume() : tcp.pause()), 5);
        socket.on("message", (data: Buffer, isBinary) => {
          received.push(decodeClientMessage(new Uint8Array(data), isBinary) as InputU8Batch);
          if (received.length === batches.length) {
            clearInterval(spurts);
            resolve();
          }
        });
      });
    });
    await new Promise((resolve) => server!.once("listening", resolve));
    const url = `ws://127.0.0.1:${(server!.address() as { port: number }).port}`;
    const connection = await wsTransport({ maxPooledSendBytes: 3 * 1024 * KiB }).connect(
      { url, token: "t", signal: new AbortController().signal },
      { onMessage: () => undefined, onClose: () => undefined },
    );
    for (const batch of batches) {
      connection.send(batch);
      await new Promise((resolve) => setImmediate(resolve));
    }
    await done;
    // Compared as bytes: a deep equality of 25 MiB of typed arrays takes vitest minutes.
    const summary = (batch: InputU8Batch) => [batch.channel, batch.sequence, Buffer.from(batch.payload).toString("base64")];
    expect(received.map(summary)).toEqual(batches.map(summary));
    connection.close();
  });
});

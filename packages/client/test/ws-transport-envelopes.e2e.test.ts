/**
 * The ws transport's reused envelopes, on loopback: every batch arrives byte
 * for byte while the peer reads in spurts and envelopes of mixed sizes are
 * reused.
 */
import { afterEach, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import { SUBPROTOCOL, decodeClientMessage, type InputU8Batch } from "@golem-stream/wire";
import { wsTransport } from "../src/ws-transport.js";

const KiB = 1024;

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

/**
 * Backpressure (protocol §12, decisions §6): a client whose application does
 * not read holds at most 256 queued entries of a stream (and 64 MiB per
 * session) and then stops reading its socket, so TCP slows the server down;
 * it never drops an item to make room, and delivers everything once the
 * application reads again.
 *
 * Seen from the server, black-box and without timing assertions: the server
 * writes as fast as the socket takes data and counts what the socket took.
 * A conforming client can never have taken more than what the application
 * was allowed to read (the credit of `read` commands) plus 256 queued entries
 * plus what the kernel's socket buffers hold (`socketBufferAllowanceBytes`).
 * That bound is checked on every write. A client that buffers without limit
 * takes the whole stream while the application reads nothing.
 */
import { createHash } from "node:crypto";
import { LIMITS, encodeServerMessage, type ServerMessage } from "@golem-stream/wire";
import { Mismatch, ensure, ensureEqual, show } from "../../check.js";
import type { ScriptedPeer } from "../scripted-server.js";
import { FINISHED, ScriptedSession, nextAttach } from "../session-script.js";
import { defineScenarios } from "../scenario.js";
import { okEnd, outputStream, resultGraphOf } from "./common.js";

/** Payload of one binary item. */
const ITEM_BYTES = 64 * 1024;
/** The server writes while at most this much waits in its own process for the socket. */
const WRITE_AHEAD_BYTES = 1024 * 1024;
/** How long the socket must take nothing before the server calls the reader stalled (a wait, never an assertion). */
const SETTLE_MS = 1000;
/** Items the application reads per `read` once it resumes. */
const READ_STEP = 64;
const POLL_MS = 5;

/** Item n: distinct contents (its number in the first four bytes), so a lost, duplicated or reordered item shows. */
function payload(n: number): Uint8Array {
  const bytes = Buffer.alloc(ITEM_BYTES, n % 256);
  bytes.writeUInt32BE(n, 0);
  return bytes;
}

const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex");

/** What the writer saw: how far the socket took data, and the first breach of the bound. */
interface WriterState {
  /** Bytes the socket took (sent minus what still waits in this process). */
  taken: number;
  written: number;
  done: boolean;
  breach: string | undefined;
}

export const backpressureScenarios = defineScenarios("backpressure", [
  {
    name: "stalled-reader",
    ref: "§12, decisions §6",
    expectation:
      "while the application reads nothing, the client stops reading its socket after at most 256 queued entries of the stream (plus what socket buffers hold), instead of buffering the server's whole output; as the application reads, it never takes more than that ahead of it; every item then arrives once, intact and in order",
    run: async (ctx) => {
      const session = new ScriptedSession(ctx.tokens);
      const stream = outputStream(ctx.tokens);
      const token = stream.token;
      const item = (n: number): Uint8Array =>
        encodeServerMessage({
          type: "output-binary",
          channel: 1,
          sequence: BigInt(n),
          cursorToken: ctx.tokens.cursor(stream.id, BigInt(n), "item"),
          payload: payload(n),
        }) as Uint8Array;
      const wireBytes = item(0).length;
      const ahead = (credit: number): number =>
        (credit + LIMITS.maxQueuedEntriesPerStream + 1) * wireBytes + ctx.socketBufferAllowanceBytes;
      // Half again what a conforming client can take without reading: an unbounded one takes it all.
      const total = Math.ceil((1.5 * ahead(0)) / wireBytes);
      let credit = 0;
      const writer: WriterState = { taken: 0, written: 0, done: false, breach: undefined };
      const observe = (peer: ScriptedPeer): void => {
        writer.taken = writer.written - peer.bufferedAmount;
        if (writer.breach === undefined && writer.taken > ahead(credit)) {
          writer.breach = `the client took ${writer.taken} bytes (${Math.floor(writer.taken / wireBytes)} items) off the socket while the application was allowed ${credit} items: more than ${LIMITS.maxQueuedEntriesPerStream} queued entries plus ${ctx.socketBufferAllowanceBytes} bytes of socket buffers`;
        }
      };
      await ctx.begin(
        async (peer) => {
          session.accept(peer, await nextAttach(peer));
          peer.send({
            type: "invocationResult",
            mappings: [{ channel: 1, direction: "output", streamToken: token }],
            result: { kind: "value", graph: resultGraphOf("blobs"), value: { kind: "stream", value: { streamToken: token } } },
          } as ServerMessage);
          for (let n = 0; n < total; n++) {
            while (peer.bufferedAmount > WRITE_AHEAD_BYTES) {
              if (peer.isClosed) return;
              observe(peer);
              await ctx.sleep(POLL_MS);
            }
            observe(peer);
            const bytes = item(n);
            peer.sendRaw(bytes);
            writer.written += bytes.length;
          }
          peer.send(okEnd(ctx.tokens, stream.id, 1, total));
          peer.send(FINISHED);
          writer.done = true;
        },
        {
          method: "blobs",
          methodParameters: {
            kind: "record",
            value: {
              fields: [
                { kind: "u32", value: total },
                { kind: "u32", value: ITEM_BYTES },
              ],
            },
          },
        },
      );
      await ctx.adapter.waitFor((e) => e.type === "result", "the result");
      const peer = ctx.server.peers[0]!;
      // The application reads nothing until the socket has taken nothing for SETTLE_MS.
      let still = 0;
      let last = -1;
      while (still < SETTLE_MS) {
        if (writer.breach !== undefined) throw new Mismatch(writer.breach);
        if (writer.done && peer.bufferedAmount === 0)
          throw new Mismatch(
            `the client took all ${total} items (${writer.written} bytes) off the socket while the application read none: it buffers without bound`,
          );
        if (peer.isClosed)
          throw new Mismatch(`the connection closed while the application was not reading; events: ${ctx.adapter.summary()}`);
        observe(peer);
        still = writer.taken === last ? still + POLL_MS : 0;
        last = writer.taken;
        await ctx.sleep(POLL_MS);
      }
      const stalledAt = writer.taken;
      for (;;) {
        const before = ctx.adapter.events.filter((e) => e.type === "readDone").length;
        credit += READ_STEP;
        ctx.adapter.send({ type: "read", stream: 0, count: READ_STEP, digest: true });
        const readDones = () => ctx.adapter.events.filter((e) => e.type === "readDone");
        await ctx.adapter.waitFor(() => readDones().length > before, `delivery of ${READ_STEP} items`);
        if (writer.breach !== undefined) throw new Mismatch(writer.breach);
        const done = readDones().at(-1);
        if (done?.type === "readDone" && done.delivered < credit) break;
      }
      await ctx.finishedOk();
      const end = await ctx.adapter.waitFor((e) => e.type === "streamEnd", "the stream's end");
      ensure(end.type === "streamEnd" && end.outcome.kind === "ok", `stream end ${show(end)}`);
      const seen = ctx.adapter.events.flatMap((e) =>
        e.type === "item" ? [`${e.size ?? "?"}:${e.sha256 ?? e.bytesHex?.slice(0, 16) ?? "?"}`] : [],
      );
      ensure(seen.length === total, `the application received ${seen.length} items, expected ${total}`);
      const wrong = seen.findIndex((s, n) => s !== `${ITEM_BYTES}:${sha256(payload(n))}`);
      ensureEqual(wrong, -1, "the first item that is not the one sent at its place (lost, duplicated, reordered or altered)");
      return `stalled after ${Math.floor(stalledAt / wireBytes)} of ${total} items (${(stalledAt / 2 ** 20).toFixed(1)} MiB) taken; all ${total} delivered once`;
    },
  },
]);

/**
 * Direct-binary output items are checked against their element schema like text items (protocol
 * 2: decoders reject values that do not match the stream element schema; 3.1: binary MIME
 * allow-lists, minimum and maximum lengths, numeric ranges). They travel as binary messages the
 * SchemaValue decoder never sees, and were delivered whatever they held. Over real WebSockets on
 * loopback, against a scripted server.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { JsonValue, ServerMessage } from "@golem-stream/wire";
import { createClient } from "../src/index.js";
import { acceptanceOf, cursor, echo, noParams, outputMapping, STREAM_OUT } from "./support/fixtures.js";
import { startFakeServer, type FakeServer } from "./support/fake-session-server.js";

let server: FakeServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const binary = (restrictions: JsonValue) => ({ kind: "binary", value: { restrictions } });
const u8 = (restrictions: JsonValue) => ({ kind: "u8", value: { restrictions } });
const PNG_UP_TO_2 = binary({ mimeTypes: ["image/png"], minBytes: 1, maxBytes: 2 });
const UP_TO_10 = u8({ min: { kind: "unsigned", value: "1" }, max: { kind: "unsigned", value: "10" } });

const blob = (payload: number[], mimeType?: string): ServerMessage => ({
  type: "output-binary",
  channel: 2,
  sequence: 0n,
  cursorToken: cursor("o", 0),
  payload: Uint8Array.from(payload),
  ...(mimeType === undefined ? {} : { mimeType }),
});
const batch = (payload: number[]): ServerMessage => ({
  type: "output-u8",
  channel: 2,
  sequence: 0n,
  cursorToken: cursor("o", 0),
  payload: Uint8Array.from(payload),
});

/** A call whose result is one `stream<element>`; the server sends `item`, then ends it and finishes. */
async function oneItemOn(element: JsonValue, item: ServerMessage) {
  server = await startFakeServer(async (peer) => {
    const start = await peer.next();
    if (start.type !== "invocationStart") throw new Error(`expected a start, got ${start.type}`);
    peer.send(acceptanceOf(start, [], { sessionToken: "s" }));
    peer.send({
      type: "invocationResult",
      mappings: [outputMapping(2)],
      result: {
        kind: "value",
        graph: { root: { kind: "stream", value: { inner: element } } },
        value: { kind: "stream", value: { streamToken: STREAM_OUT } },
      },
    });
    peer.send(item);
    const count = item.type === "output-u8" ? item.payload.length : 1;
    peer.send({ type: "outputStreamEnd", channel: 2, cursorToken: cursor("o", "end"), outcome: { kind: "ok" }, sequence: BigInt(count) });
    peer.send({ type: "invocationFinished", outcome: { kind: "success" } });
  });
  const call = createClient({ url: server.url, token: "t", reconnect: { maxAttempts: 0 } }).invoke({
    ...echo,
    method: "blobs",
    methodParameters: noParams,
  });
  call.finished.catch(() => undefined);
  const result = await call.result;
  const delivered: unknown[] = [];
  const read = (async () => {
    for await (const chunk of result.kind === "value" ? result.streams[0]! : []) {
      delivered.push(chunk instanceof Uint8Array ? [...chunk] : { ...chunk, bytes: [...("bytes" in chunk ? chunk.bytes : [])] });
    }
  })();
  const [finished, reading] = await Promise.allSettled([call.finished, read]);
  return { finished, reading, delivered };
}

describe("direct-binary output items are validated against their element schema", () => {
  it.each([
    ["a MIME type the allow-list does not hold", PNG_UP_TO_2, blob([1], "text/plain")],
    ["a MIME type that differs in case only (matched exactly)", PNG_UP_TO_2, blob([1], "image/PNG")],
    ["an empty item where minBytes is 1", PNG_UP_TO_2, blob([])],
    ["an item longer than maxBytes", PNG_UP_TO_2, blob([1, 2, 3], "image/png")],
    ["a u8 byte above the element's max", UP_TO_10, batch([5, 200])],
    ["a u8 byte below the element's min", UP_TO_10, batch([0])],
  ])("%s fails the invocation as a server violation (validation-error) and is never delivered", async (_, element, item) => {
    const { finished, reading, delivered } = await oneItemOn(element, item);
    expect(finished).toMatchObject({ status: "rejected", reason: { kind: "server-violation", code: "validation-error" } });
    expect(reading).toMatchObject({ status: "rejected", reason: { kind: "server-violation", code: "validation-error" } });
    expect(delivered).toEqual([]);
  });

  it.each([
    ["an allowed MIME type and length", PNG_UP_TO_2, blob([1, 2], "image/png"), { bytes: [1, 2], mimeType: "image/png" }],
    ["no MIME type (optional, decisions §3)", PNG_UP_TO_2, blob([7]), { bytes: [7] }],
    ["bytes within the range", UP_TO_10, batch([1, 10]), [1, 10]],
  ])("%s is delivered", async (_, element, item, expected) => {
    const { finished, delivered } = await oneItemOn(element, item);
    expect(finished.status).toBe("fulfilled");
    expect(delivered).toEqual([expected]);
  });
});

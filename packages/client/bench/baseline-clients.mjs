/**
 * The sending side of the two baselines small items are measured against (docs/performance.md):
 * the hand-written durable peer (bench/durable-peer.mjs) and Durable Streams
 * (bench/durable-streams-peer.mjs). Each resolves with the seconds from the first message to the
 * acknowledgement of the last, and checks the receiver's result.
 */
import { createHash } from "node:crypto";
import { WebSocket } from "ws";
import { DurableStream, IdempotentProducer } from "@durable-streams/client";
import { MIB, time } from "./throughput.mjs";

/** The most payload bytes the durable peer's client keeps sent but unacknowledged. */
const MAX_UNACKED = 16 * MIB;

/**
 * One `ws` message per item (binary for bytes, text for strings) to the hand-written durable
 * peer, at most 16 MiB unacknowledged; resolves when the last byte is acknowledged (synced).
 */
export async function durableWs(url, messages, isBinary) {
  const socket = new WebSocket(`${url}/?count=${messages.length}`, { perMessageDeflate: false });
  await new Promise((resolve) => socket.once("open", resolve));
  const expected = isBinary ? createHash("sha256") : undefined;
  let total = 0;
  const sizes = messages.map((message) => (typeof message === "string" ? Buffer.byteLength(message) : message.byteLength));
  for (let i = 0; i < messages.length; i++) {
    total += sizes[i];
    expected?.update(messages[i]);
  }
  let acked = 0;
  let wake;
  let done;
  const finished = new Promise((resolve) => (done = resolve));
  socket.on("message", (data) => {
    const text = data.toString();
    if (text.startsWith("done ")) return done(text.slice(5));
    acked = Number(text);
    wake?.();
  });
  const seconds = await time(async () => {
    let sent = 0;
    for (let i = 0; i < messages.length; i++) {
      while (sent - acked + sizes[i] > MAX_UNACKED) await new Promise((resolve) => (wake = resolve));
      socket.send(messages[i], { binary: isBinary });
      sent += sizes[i];
    }
    const result = await finished;
    const want = isBinary ? expected.digest("hex") : String(messages.length);
    if (result !== want || acked !== total)
      throw new Error(`durable peer answered ${result} (acked ${acked} of ${total} bytes), not ${want}`);
  });
  socket.close();
  return seconds;
}

let streamNumber = 0;

/**
 * Durable Streams with its own client: a fresh stream, its `IdempotentProducer` appending every
 * item (batched by the producer, as its documentation recommends for throughput), then `flush`,
 * which resolves once every batch is answered (the server answers after its `fdatasync`).
 * Strings go to a JSON stream (one message per item, as each is an item), bytes to a byte stream.
 */
export async function durableStreams(baseUrl, messages, isBinary) {
  const stream = await DurableStream.create({
    url: `${baseUrl}/v1/stream/bench-${process.pid}-${streamNumber++}`,
    contentType: isBinary ? "application/octet-stream" : "application/json",
  });
  const errors = [];
  const producer = new IdempotentProducer(stream, "bench", { onError: (error) => errors.push(error) });
  const seconds = await time(async () => {
    for (const message of messages) producer.append(isBinary ? message : JSON.stringify(message));
    await producer.flush();
  });
  await producer.close();
  if (errors.length > 0) throw errors[0];
  // Every item must be there: a bench that loses items must not look fast.
  if (isBinary) {
    const bytes = (await (await stream.stream({ live: false })).body()).byteLength;
    const want = messages.reduce((sum, message) => sum + message.byteLength, 0);
    if (bytes !== want) throw new Error(`Durable Streams holds ${bytes} bytes, not ${want}`);
  } else {
    const items = await (await stream.stream({ json: true, live: false })).json();
    if (items.length !== messages.length) throw new Error(`Durable Streams holds ${items.length} items, not ${messages.length}`);
  }
  return seconds;
}

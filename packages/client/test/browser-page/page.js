/**
 * What test/browser.test.ts runs inside Chromium: the package imported by
 * name, bundled by esbuild for the browser (so its `browser` build, with the
 * default WebSocket transport), and one function per scenario. Each returns
 * plain data the test compares; nothing here decides whether a test passed.
 */
import { ClientError, createClient, inputStream } from "@golem-stream/client";

const demo = {
  application: "demo",
  environment: "default",
  agentType: "echo",
  constructorParameters: { kind: "record", value: { fields: [{ kind: "string", value: "browser" }] } },
};
const record = (...fields) => ({ kind: "record", value: { fields } });
const u32 = (value) => ({ kind: "u32", value });
const fast = { initialDelayMs: 10, maxDelayMs: 100, maxAttempts: 50 };

const hex = (buffer) => Array.from(new Uint8Array(buffer), (byte) => byte.toString(16).padStart(2, "0")).join("");
const fieldValues = (result) => (result.kind === "value" ? result.value.value.fields.map((field) => field.value) : []);

async function collect(iterable) {
  const out = [];
  for await (const item of iterable) out.push(item);
  return out;
}

window.scenarios = {
  /** A Blob of `size` random bytes, digested by the server and by crypto.subtle here. */
  async digest({ url, token, size }) {
    const bytes = new Uint8Array(size);
    for (let at = 0; at < size; at += 65536) crypto.getRandomValues(bytes.subarray(at, at + 65536));
    const blob = new Blob([bytes.subarray(0, size >> 1), bytes.subarray(size >> 1)], { type: "application/octet-stream" });
    const local = hex(await crypto.subtle.digest("SHA-256", bytes));
    const client = createClient({ url, token, reconnect: fast });
    const call = client.invoke({ ...demo, method: "digest", methodParameters: record(inputStream.bytes(blob)) });
    const server = fieldValues(await call.result);
    await call.finished;
    return { size: blob.size, local, server };
  },

  /** Text items from an async generator and from a pulled ReadableStream, read back with `for await` and through `readable()`. */
  async reverse({ url, token, items }) {
    const client = createClient({ url, token, reconnect: fast });
    async function* source() {
      for (const item of items) yield item;
    }
    const first = client.invoke({ ...demo, method: "reverse", methodParameters: record(inputStream.strings(source())) });
    const firstResult = await first.result;
    const iterated = (await collect(firstResult.streams[0].values())).map((item) => item.value);
    await first.finished;

    let next = 0;
    const pulled = new ReadableStream({
      pull(controller) {
        if (next < items.length) controller.enqueue(items[next++]);
        else controller.close();
      },
    });
    const second = client.invoke({ ...demo, method: "reverse", methodParameters: record(inputStream.strings(pulled)) });
    const reader = (await second.result).streams[0].readable().getReader();
    const read = [];
    for (let next = await reader.read(); !next.done; next = await reader.read()) read.push(next.value.value);
    await second.finished;
    return { iterated, read };
  },

  /**
   * `split` of a ReadableStream of bytes: two output streams in one result
   * record, read at the same time — the bytes through `readable()` into a
   * Response, the lines with `for await`.
   */
  async split({ url, token, text }) {
    const client = createClient({ url, token, reconnect: fast });
    const encoded = new TextEncoder().encode(text);
    const input = new ReadableStream({
      start(controller) {
        for (let at = 0; at < encoded.length; at += 1000) controller.enqueue(encoded.slice(at, at + 1000));
        controller.close();
      },
    });
    const call = client.invoke({ ...demo, method: "split", methodParameters: record(inputStream.bytes(input)) });
    const result = await call.result;
    const [upperStream, linesStream] = result.streams;
    const [upper, lines] = await Promise.all([
      new Response(upperStream.readable()).text(),
      collect(linesStream.values()).then((items) => items.map((item) => item.value)),
    ]);
    await call.finished;
    return { upper, lines, coordinates: result.streams.map((stream) => stream.coordinate) };
  },

  /** `groups`: a stream of records, each announcing a nested stream of its own. */
  async groups({ url, token, groups, per }) {
    const client = createClient({ url, token, reconnect: fast });
    const call = client.invoke({ ...demo, method: "groups", methodParameters: record(u32(groups), u32(per)) });
    const result = await call.result;
    const out = [];
    for await (const group of result.streams[0].js()) out.push({ name: group.name, items: await collect(group.items.js()) });
    await call.finished;
    return out;
  },

  /** `count` to `to` through a path the test cuts; every item and the reconnections seen. */
  async count({ url, token, to }) {
    const client = createClient({ url, token, reconnect: fast });
    const call = client.invoke({ ...demo, method: "count", methodParameters: record(u32(to), u32(0)) });
    const reconnects = [];
    call.on("reconnecting", (event) => reconnects.push(event.cause));
    const items = (await collect((await call.result).streams[0].values())).map((item) => item.value);
    await call.finished;
    return { items, reconnects };
  },

  /**
   * `count` read for three items, then cancelled while the server is still sending: what
   * `cancel()` reported, and the state another client takes the session over from.
   */
  async cancel({ url, token, to }) {
    const client = createClient({ url, token, reconnect: fast });
    const call = client.invoke({ ...demo, method: "count", methodParameters: record(u32(to), u32(1)) });
    const iterator = (await call.result).streams[0].values()[Symbol.asyncIterator]();
    for (let i = 0; i < 3; i++) await iterator.next();
    const state = call.state; // strings only: it crosses back to Node as it is
    const outcome = await call.cancel();
    return { outcome: outcome.kind, state };
  },

  /** A token the server does not accept: how the call fails, and after how many reconnects. */
  async wrongToken({ url }) {
    const client = createClient({ url, token: "not-the-token", reconnect: fast });
    const call = client.invoke({ ...demo, method: "count", methodParameters: record(u32(1), u32(0)) });
    let reconnects = 0;
    call.on("reconnecting", () => reconnects++);
    try {
      await call.result;
      return { outcome: "accepted" };
    } catch (error) {
      return error instanceof ClientError
        ? { outcome: "failed", kind: error.kind, code: error.code, reconnects }
        : { outcome: "threw", message: String(error) };
    }
  },
};
window.scenariosReady = true;

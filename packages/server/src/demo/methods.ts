/**
 * The demo methods of decisions-v1 section 7, implementing `echoContract`
 * with plain JavaScript exactly as a user's typed agent would.
 */
import { createHash, randomUUID } from "node:crypto";
import { PublicProducerError, type AgentTypeDefinition } from "../agent-host.js";
import { implement } from "../contracts/implement.js";
import type { OutputSourceOf, TypedOutputWriter } from "../contracts/streams.js";
import { DEMO_MAX_BLOB_BYTES, echoContract } from "./catalogue.js";
import { Pipe } from "./pipe.js";

/** Resolves after `ms`, or rejects early when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Deterministic blob `index` of `size` bytes: byte j is (index + j) mod 256. */
export function demoBlob(index: number, size: number): Uint8Array {
  // The schema bounds `size` before a start is accepted; this guards callers outside the host.
  if (!Number.isSafeInteger(size) || size < 0 || size > DEMO_MAX_BLOB_BYTES)
    throw new RangeError(`a demo blob has 0 to ${DEMO_MAX_BLOB_BYTES} bytes`);
  const bytes = new Uint8Array(size);
  for (let j = 0; j < size; j++) bytes[j] = (index + j) & 0xff;
  return bytes;
}

const SURROGATE = /[\uD800-\uDFFF]/;
/** Longest text reversed through one `String.fromCharCode` call (its arguments go on the stack). */
const MAX_FAST_REVERSE = 4096;

/**
 * Reverses by Unicode scalar value, so surrogate pairs stay intact. Text
 * with no surrogate (nearly all) is reversed by code unit into one flat
 * string: the bench's `reverse` row calls this for every item, and the
 * generic split into an array of scalars cost three times as much.
 */
export function reverseScalars(text: string): string {
  if (text.length > MAX_FAST_REVERSE || SURROGATE.test(text)) return Array.from(text).reverse().join("");
  const units = new Array<number>(text.length);
  for (let i = 0, j = text.length - 1; j >= 0; i++, j--) units[i] = text.charCodeAt(j);
  return String.fromCharCode(...units);
}

/** Writes `item(i)` for i in 0..to-1 with an optional delay, stopping early when the stream is cancelled. */
function counter<T>(to: number, delayMs: number, item: (index: number) => T): OutputSourceOf<T> {
  return async (writer: TypedOutputWriter<T>) => {
    for (let i = 0; i < to; i++) {
      if (delayMs > 0) await sleep(delayMs, writer.signal);
      await writer.write(item(i));
    }
  };
}

const NEWLINE = 0x0a;

/** Upper-cases ASCII letters of `data` into one output and splits it into lines on the other. */
function splitBytes(input: AsyncIterable<Uint8Array>): { upper: Pipe<Uint8Array>; lines: Pipe<string> } {
  const upper = new Pipe<Uint8Array>();
  const lines = new Pipe<string>();
  // One reader feeds both outputs; each pipe is bounded, so the slower
  // output backpressures the input.
  void (async () => {
    const decoder = new TextDecoder();
    let pending = "";
    try {
      for await (const chunk of input) {
        await upper.write(chunk.map((byte) => (byte >= 0x61 && byte <= 0x7a ? byte - 0x20 : byte)));
        let start = 0;
        for (let i = 0; i < chunk.length; i++) {
          if (chunk[i] !== NEWLINE) continue;
          await lines.write(pending + decoder.decode(chunk.subarray(start, i)));
          pending = "";
          start = i + 1;
        }
        pending += decoder.decode(chunk.subarray(start), { stream: true });
      }
      pending += decoder.decode();
      if (pending.length > 0) await lines.write(pending);
      upper.end();
      lines.end();
    } catch (error) {
      upper.fail(error);
      lines.fail(error);
    }
  })();
  return { upper, lines };
}

/** The `echo` agent type with its implementations. */
export const ECHO_AGENT_TYPE: AgentTypeDefinition = implement(echoContract, {
  async reverse(_ctx, { input }) {
    return (async function* () {
      for await (const item of input) yield reverseScalars(item);
    })();
  },

  async digest(_ctx, { data }) {
    // node:crypto rather than a JavaScript SHA-256: hashing runs on the
    // server's event loop and was a third of the cost of a large upload.
    const hash = createHash("sha256");
    let bytes = 0n;
    for await (const chunk of data) {
      hash.update(chunk);
      bytes += BigInt(chunk.length);
    }
    return { bytes, sha256: hash.digest("hex") };
  },

  async count(_ctx, { to, delayMs }) {
    return counter(to, delayMs, (index) => index);
  },

  async blobs(_ctx, { count, size }) {
    return (function* () {
      for (let i = 0; i < count; i++) yield { bytes: demoBlob(i, size), mimeType: "application/octet-stream" };
    })();
  },

  async split(_ctx, { data }) {
    return splitBytes(data);
  },

  async groups(_ctx, { groups, per }) {
    return (function* () {
      for (let g = 0; g < groups; g++) yield { name: `group-${g}`, items: counter(per, 0, (index) => index) };
    })();
  },

  async fail(_ctx, { after }) {
    return (function* () {
      for (let i = 0; i < after; i++) yield i;
      throw new PublicProducerError("producer failed");
    })();
  },

  /** Counts the input's items and sums their UTF-8 byte lengths; sends nothing back until the end. */
  async tally(_ctx, { input }) {
    // Counted in numbers (exact up to 2^53, petabytes of text) and made u64 once at the end:
    // two BigInts per item were a measurable share of a 64-byte item's cost.
    let items = 0;
    let bytes = 0;
    for await (const item of input) {
      items += 1;
      bytes += Buffer.byteLength(item, "utf8");
    }
    return { items: BigInt(items), bytes: BigInt(bytes) };
  },

  /**
   * `count`, each item carrying three values journaled once before the first: a step whose
   * function returns a fresh UUID, `ctx.now()` and `ctx.random()`. A re-run that follows the
   * journal repeats them; one that calls the step again or reads the clock or randomness afresh
   * shows it in every item it produces (the conformance kit's `restart.rerun-follows-journal`).
   */
  async journal(ctx, { to, delayMs }) {
    const step = await ctx.step("journal-token", () => randomUUID());
    const now = BigInt(await ctx.now());
    const random = await ctx.random();
    return counter(to, delayMs, (index) => ({ index, step, now, random }));
  },
});

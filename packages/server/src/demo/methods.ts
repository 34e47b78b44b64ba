/**
 * The demo methods of decisions-v1 section 7, written against the public
 * `InvocationContext` exactly as a user's agent would be.
 */
import { createHash } from "node:crypto";
import type { SchemaValueJson } from "@golem-stream/wire";
import {
  PublicProducerError,
  type AgentTypeDefinition,
  type InvocationContext,
  type MethodImplementation,
  type OutputItem,
} from "../agent-host.js";
import { DEMO_AGENT_TYPE, ECHO_CONSTRUCTOR, ECHO_METHODS } from "./catalogue.js";
import { Pipe } from "./pipe.js";
import { field, record, str, stringOf, u32, u32Field, u64 } from "./values.js";

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
  const bytes = new Uint8Array(size);
  for (let j = 0; j < size; j++) bytes[j] = (index + j) & 0xff;
  return bytes;
}

/** Reverses by Unicode scalar value, so surrogate pairs stay intact. */
export function reverseScalars(text: string): string {
  return Array.from(text).reverse().join("");
}

const reverse: MethodImplementation = async (ctx) => {
  const input = ctx.inputValues(field(ctx.parameters, 0));
  return ctx.output(
    (async function* () {
      for await (const item of input) yield str(reverseScalars(stringOf(item)));
    })(),
  );
};

const digest: MethodImplementation = async (ctx) => {
  // node:crypto rather than a JavaScript SHA-256: hashing runs on the
  // server's event loop and was a third of the cost of a large upload.
  const hash = createHash("sha256");
  let total = 0n;
  for await (const chunk of ctx.inputBytes(field(ctx.parameters, 0))) {
    hash.update(chunk);
    total += BigInt(chunk.length);
  }
  return record(u64(total), str(hash.digest("hex")));
};

function counter(ctx: InvocationContext, to: number, delayMs: number): SchemaValueJson {
  return ctx.output(async (writer) => {
    for (let i = 0; i < to; i++) {
      if (delayMs > 0) await sleep(delayMs, writer.signal);
      await writer.write(u32(i));
    }
  });
}

const count: MethodImplementation = async (ctx) =>
  counter(ctx, u32Field(ctx.parameters, 0), u32Field(ctx.parameters, 1));

const blobs: MethodImplementation = async (ctx) => {
  const total = u32Field(ctx.parameters, 0);
  const size = u32Field(ctx.parameters, 1);
  return ctx.output(
    (function* (): Generator<OutputItem> {
      for (let i = 0; i < total; i++) yield { bytes: demoBlob(i, size), mimeType: "application/octet-stream" };
    })(),
  );
};

const NEWLINE = 0x0a;

const split: MethodImplementation = async (ctx) => {
  const input = ctx.inputBytes(field(ctx.parameters, 0));
  const upper = new Pipe<Uint8Array>();
  const lines = new Pipe<SchemaValueJson>();
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
          await lines.write(str(pending + decoder.decode(chunk.subarray(start, i))));
          pending = "";
          start = i + 1;
        }
        pending += decoder.decode(chunk.subarray(start), { stream: true });
      }
      pending += decoder.decode();
      if (pending.length > 0) await lines.write(str(pending));
      upper.end();
      lines.end();
    } catch (error) {
      upper.fail(error);
      lines.fail(error);
    }
  })();
  return record(ctx.output(upper), ctx.output(lines));
};

const groups: MethodImplementation = async (ctx) => {
  const groupCount = u32Field(ctx.parameters, 0);
  const per = u32Field(ctx.parameters, 1);
  return ctx.output(
    (function* (): Generator<OutputItem> {
      for (let g = 0; g < groupCount; g++) yield record(str(`group-${g}`), counter(ctx, per, 0));
    })(),
  );
};

/** Counts the input's items and sums their UTF-8 byte lengths; sends nothing back until the end. */
const tally: MethodImplementation = async (ctx) => {
  let items = 0n;
  let bytes = 0n;
  for await (const item of ctx.inputValues(field(ctx.parameters, 0))) {
    items += 1n;
    bytes += BigInt(Buffer.byteLength(stringOf(item), "utf8"));
  }
  return record(u64(items), u64(bytes));
};

const fail: MethodImplementation = async (ctx) => {
  const after = u32Field(ctx.parameters, 0);
  return ctx.output(
    (function* (): Generator<OutputItem> {
      for (let i = 0; i < after; i++) yield u32(i);
      throw new PublicProducerError("producer failed");
    })(),
  );
};

/** The `echo` agent type with its implementations. */
export const ECHO_AGENT_TYPE: AgentTypeDefinition = {
  name: DEMO_AGENT_TYPE,
  constructorParameters: ECHO_CONSTRUCTOR,
  methods: ECHO_METHODS,
  config: [],
  implementations: { reverse, digest, count, blobs, split, groups, fail, tally },
};

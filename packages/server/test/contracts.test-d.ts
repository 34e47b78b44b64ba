/**
 * `implement` as types: parameters are plain JavaScript typed by the contract
 * (bigint for 64-bit integers, async iterables for input streams), results
 * likewise (sources for output streams), and the `@ts-expect-error` table
 * lists implementations that must not compile.
 */
import { describe, expectTypeOf, it } from "vitest";
import {
  defineAgentType,
  implement,
  t,
  type BinaryItem,
  type ContractContext,
  type OutputSourceOf,
  type ParamsIn,
  type ResultOut,
  type TypedOutputWriter,
} from "../src/index.js";
import { echoContract } from "../src/demo/index.js";

const files = defineAgentType({
  name: "files",
  constructor: t.record({ root: t.string(), limit: t.u64() }),
  methods: {
    put: { params: t.record({ path: t.string(), body: t.stream(t.u8()), parts: t.stream(t.binary()) }), result: t.u64() },
    lines: { params: t.record({ input: t.stream(t.record({ n: t.s64(), text: t.string() })) }), result: t.stream(t.string()) },
    nested: { params: t.record({}), result: t.stream(t.record({ name: t.string(), items: t.stream(t.u32()) })) },
    forget: { params: t.record({ path: t.string() }) },
  },
});

describe("implement: parameters", () => {
  it("maps input streams to async iterables of their elements", () => {
    expectTypeOf<ParamsIn<typeof files, "put">>().toEqualTypeOf<{
      path: string;
      body: AsyncIterable<Uint8Array>;
      parts: AsyncIterable<BinaryItem>;
    }>();
    expectTypeOf<ParamsIn<typeof files, "lines">>().toEqualTypeOf<{ input: AsyncIterable<{ n: bigint; text: string }> }>();
    expectTypeOf<ParamsIn<typeof echoContract, "reverse">>().toEqualTypeOf<{ input: AsyncIterable<string> }>();
    expectTypeOf<ParamsIn<typeof echoContract, "digest">>().toEqualTypeOf<{ data: AsyncIterable<Uint8Array> }>();
  });

  it("gives the constructor arguments as JavaScript on the context", () => {
    expectTypeOf<ContractContext<typeof files>["constructorArgs"]>().toEqualTypeOf<{ root: string; limit: bigint }>();
  });
});

describe("implement: results", () => {
  it("maps output streams to sources and methods without a result to void", () => {
    expectTypeOf<ResultOut<typeof files, "put">>().toEqualTypeOf<bigint>();
    expectTypeOf<ResultOut<typeof files, "lines">>().toEqualTypeOf<OutputSourceOf<string>>();
    expectTypeOf<ResultOut<typeof files, "nested">>().toEqualTypeOf<OutputSourceOf<{ name: string; items: OutputSourceOf<number> }>>();
    expectTypeOf<ResultOut<typeof files, "forget">>().toEqualTypeOf<void>();
    expectTypeOf<ResultOut<typeof echoContract, "split">>().toEqualTypeOf<{
      upper: OutputSourceOf<Uint8Array>;
      lines: OutputSourceOf<string>;
    }>();
    expectTypeOf<ResultOut<typeof echoContract, "blobs">>().toEqualTypeOf<OutputSourceOf<Uint8Array | BinaryItem>>();
  });

  it("accepts generators, arrays and writer functions as output streams", () => {
    implement(files, {
      put: async (ctx, { body }) => {
        let total = 0n;
        for await (const chunk of body) total += BigInt(chunk.length);
        return total > ctx.constructorArgs.limit ? ctx.constructorArgs.limit : total;
      },
      lines: async (_ctx, { input }) =>
        (async function* () {
          for await (const { n, text } of input) yield `${n}: ${text}`;
        })(),
      nested: async () => [
        { name: "a", items: [1, 2] },
        { name: "b", items: async (writer: TypedOutputWriter<number>) => void (await writer.write(3)) },
      ],
      forget: async () => {},
    });
  });
});

describe("implement: what must not compile", () => {
  it("wrong implementations", () => {
    const base = {
      put: async () => 0n,
      lines: async () => ["x"],
      nested: async () => [],
      forget: async () => {},
    };
    implement(files, {
      ...base,
      // @ts-expect-error a u64 result is a bigint
      put: async () => 1,
    });
    implement(files, {
      ...base,
      // @ts-expect-error a stream<string> output yields strings
      lines: async () => [1, 2],
    });
    implement(files, {
      ...base,
      lines: async (_ctx, { input }) => {
        // @ts-expect-error an input stream is not an array
        input.map((x: unknown) => x);
        return [];
      },
    });
    implement(files, {
      ...base,
      put: async (_ctx, { path }) => {
        // @ts-expect-error path is a string
        const n: number = path;
        return BigInt(n);
      },
    });
    // @ts-expect-error a method of the contract is missing
    implement(files, { put: base.put, lines: base.lines, nested: base.nested });
    // @ts-expect-error a method the contract does not declare
    implement(files, { ...base, extra: async () => 1 });
    implement(files, {
      ...base,
      // @ts-expect-error nested items need their stream field
      nested: async () => [{ name: "a" }],
    });
    implement(echoContract, {
      // @ts-expect-error digest returns {bytes: bigint, sha256: string}
      digest: async () => ({ bytes: 1, sha256: "x" }),
      reverse: async () => [],
      count: async () => [],
      blobs: async () => [],
      split: async () => ({ upper: [], lines: [] }),
      groups: async () => [],
      fail: async () => [],
      tally: async () => ({ items: 0n, bytes: 0n }),
    });
  });
});

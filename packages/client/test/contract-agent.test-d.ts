/**
 * `typedAgent(client, contract)` as types: parameters take sources where the
 * contract has input streams, results give `TypedOutput`s of typed elements,
 * and the `@ts-expect-error` table lists calls that must not compile.
 */
import { echoContract } from "@golem-stream/contract/demo";
import { describe, expectTypeOf, it } from "vitest";
import {
  defineAgentType,
  t,
  typedAgent,
  type BinaryBlob,
  type Client,
  type InputStream,
  type TypedAgent,
  type TypedCall,
  type TypedOutput,
} from "../src/index.js";

declare const client: Client;
declare const echo: TypedAgent<typeof echoContract>;
declare const file: {
  readonly size: number;
  readonly type: string;
  stream(): ReadableStream<Uint8Array>;
  arrayBuffer(): Promise<ArrayBuffer>;
};

describe("typed calls", () => {
  it("typedAgent takes the constructor as typed JavaScript and gives a TypedAgent", () => {
    expectTypeOf(
      typedAgent(client, echoContract, { application: "demo", environment: "default", constructorArgs: { name: "x" } }),
    ).toEqualTypeOf<Promise<TypedAgent<typeof echoContract>>>();
  });

  it("client.connect takes the constructor (the issue's spelling) or constructorArgs, typed, and gives a TypedAgent", () => {
    expectTypeOf(client.connect(echoContract, { application: "demo", environment: "default", constructor: { name: "x" } })).toEqualTypeOf<
      Promise<TypedAgent<typeof echoContract>>
    >();
    expectTypeOf(
      client.connect(echoContract, { application: "demo", environment: "default", constructorArgs: { name: "x" } }),
    ).toEqualTypeOf<Promise<TypedAgent<typeof echoContract>>>();
    // @ts-expect-error the constructor's name must be a string
    void client.connect(echoContract, { application: "demo", environment: "default", constructor: { name: 1 } });
  });

  it("results: records with bigints, TypedOutputs of strings, bytes, blobs and nested records", async () => {
    expectTypeOf(echo.digest({ data: [new Uint8Array(1)] })).toEqualTypeOf<TypedCall<{ bytes: bigint; sha256: string }>>();
    expectTypeOf(await echo.digest({ data: file })).toEqualTypeOf<{ bytes: bigint; sha256: string }>();
    expectTypeOf(await echo.split({ data: file })).toEqualTypeOf<{ upper: TypedOutput<Uint8Array>; lines: TypedOutput<string> }>();
    expectTypeOf(await echo.reverse({ input: ["a"] })).toEqualTypeOf<TypedOutput<string>>();
    expectTypeOf(await echo.blobs({ count: 1, size: 1 })).toEqualTypeOf<TypedOutput<BinaryBlob>>();
    expectTypeOf(await echo.groups({ groups: 1, per: 1 })).toEqualTypeOf<TypedOutput<{ name: string; items: TypedOutput<number> }>>();
    for await (const group of await echo.groups({ groups: 1, per: 1 })) {
      for await (const item of group.items) expectTypeOf(item).toEqualTypeOf<number>();
    }
  });

  it("parameters: sources of any kind, or an InputStream", () => {
    async function* strings(): AsyncGenerator<string> {}
    echo.reverse({ input: strings() });
    echo.reverse({ input: new ReadableStream<string>() });
    echo.reverse({ input: {} as InputStream });
    echo.tally({ input: new Set(["a"]) });
    const noResult = defineAgentType({ name: "sink", constructor: t.record({}), methods: { put: { params: t.record({ n: t.u64() }) } } });
    expectTypeOf<TypedAgent<typeof noResult>["put"]>().returns.toEqualTypeOf<TypedCall<undefined>>();
  });

  it("a call is a Promise of its result: catch, finally, Promise.race, a Promise<R> variable", async () => {
    const call = echo.digest({ data: file });
    expectTypeOf(call).toExtend<Promise<{ bytes: bigint; sha256: string }>>();
    const promise: Promise<{ bytes: bigint; sha256: string }> = call;
    void promise;
    expectTypeOf(call.catch(() => "failed" as const)).toEqualTypeOf<Promise<{ bytes: bigint; sha256: string } | "failed">>();
    expectTypeOf(call.catch((error: unknown) => error)).toEqualTypeOf<Promise<unknown>>();
    expectTypeOf(call.finally(() => undefined)).toEqualTypeOf<Promise<{ bytes: bigint; sha256: string }>>();
    expectTypeOf(await Promise.race([call, echo.tally({ input: ["a"] })])).toEqualTypeOf<
      { bytes: bigint; sha256: string } | { items: bigint; bytes: bigint }
    >();
    expectTypeOf(call[Symbol.toStringTag]).toEqualTypeOf<string>();
    expectTypeOf(call.finished).toEqualTypeOf<Promise<{ readonly kind: "success" }>>();
  });

  it("what must not compile", () => {
    // @ts-expect-error the constructor's name is a string
    void typedAgent(client, echoContract, { application: "demo", environment: "default", constructorArgs: { name: 1 } });
    // @ts-expect-error the constructor arguments are required
    void typedAgent(client, echoContract, { application: "demo", environment: "default" });
    // @ts-expect-error a u32 parameter is a number
    echo.count({ to: "3", delayMs: 0 });
    // @ts-expect-error a parameter is missing
    echo.count({ to: 3 });
    // @ts-expect-error a stream<string> parameter takes strings
    echo.reverse({ input: [1, 2] });
    // @ts-expect-error a stream<u8> parameter takes bytes, not strings
    echo.digest({ data: ["text"] });
    // @ts-expect-error the contract has no such method
    echo.shout({ text: "x" });
    async () => {
      const { lines } = await echo.split({ data: file });
      for await (const line of lines) {
        // @ts-expect-error lines are strings
        const n: number = line;
        void n;
      }
      // @ts-expect-error digest's byte count is a bigint
      const bytes: number = (await echo.digest({ data: file })).bytes;
      void bytes;
    };
  });
});

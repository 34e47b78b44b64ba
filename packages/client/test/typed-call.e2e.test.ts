/**
 * A typed call is a `Promise` of its result to its caller, on loopback: `catch`, `finally`,
 * `Promise.race` and the like work as with any promise, while a failed call whose result nobody
 * asked for (only `finished` or `invocation` used) leaves no unhandled rejection behind.
 */
import { echoContract } from "@golem-stream/contract/demo";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClientError, createClient, TypedCall, type CallResult, type Client, type TypedAgent } from "../src/index.js";
import { startServer, TOKEN } from "./support/embedded.js";

let server: Awaited<ReturnType<typeof startServer>>;
let client: Client;
let echo: TypedAgent<typeof echoContract>;
beforeAll(async () => {
  server = await startServer();
  client = createClient({ url: server.url, token: TOKEN });
  echo = await client.connect(echoContract, { application: "demo", environment: "default", constructor: { name: "promise" } });
});
afterAll(async () => server.dispose());

/** A call the caller's signal cancels before it starts: its result, finished and accepted reject with `aborted`. */
const aborted = (): TypedCall<unknown> => echo.tally({ input: ["a"] }, { signal: AbortSignal.abort() });

/** Lets rejections without a handler be reported: Node does so after the microtasks of a macrotask. */
const turns = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 10));
};

describe("a typed call behaves as a promise of its result", () => {
  it("catch gets the call's ClientError; finally runs and passes the outcome on", async () => {
    const caught = await aborted().catch((error: unknown) => error);
    expect(caught).toBeInstanceOf(ClientError);
    expect(caught).toMatchObject({ kind: "aborted" });

    let ran = 0;
    await expect(
      aborted().finally(() => {
        ran++;
      }),
    ).rejects.toMatchObject({ kind: "aborted" });
    const call = echo.digest({ data: [new Uint8Array([1, 2, 3])] });
    expect(
      await call.finally(() => {
        ran++;
      }),
    ).toMatchObject({ bytes: 3n });
    expect(ran).toBe(2);
    // catch of a call that succeeds gives its result.
    expect(await echo.digest({ data: [new Uint8Array(2)] }).catch(() => "failed")).toMatchObject({ bytes: 2n });
  });

  it("goes where promises go: Promise.race, Promise.allSettled, a function returning a Promise", async () => {
    const never = new Promise<never>(() => undefined);
    expect(await Promise.race([echo.digest({ data: [new Uint8Array(4)] }), never])).toMatchObject({ bytes: 4n });
    const [settled] = await Promise.allSettled([aborted()]);
    expect(settled).toMatchObject({ status: "rejected", reason: { kind: "aborted" } });
    const asPromise = (): Promise<{ bytes: bigint; sha256: string }> => echo.digest({ data: [new Uint8Array(5)] });
    expect((await asPromise()).bytes).toBe(5n);
  });

  it("says what it is: [object TypedCall], not a native Promise", () => {
    const call = aborted();
    void call.finished.catch(() => undefined);
    expect(Object.prototype.toString.call(call)).toBe("[object TypedCall]");
    expect(String(call)).toBe("[object TypedCall]");
    expect(call).not.toBeInstanceOf(Promise);
    expect(call).toBeInstanceOf(TypedCall);
  });

  it("a failed call whose result is never asked for leaves no unhandled rejection", async () => {
    const unhandled: unknown[] = [];
    const record = (reason: unknown): void => void unhandled.push(reason);
    process.on("unhandledRejection", record);
    try {
      const call = aborted();
      // Only the other members: the untyped handle and finished.
      await expect(call.finished).rejects.toMatchObject({ kind: "aborted" });
      await expect(call.invocation.result).rejects.toMatchObject({ kind: "aborted" });
      const untouched = aborted();
      expect(untouched.invocation).toBeDefined();
      await untouched.invocation.finished.catch(() => undefined);
      await turns();
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", record);
    }
  });
});

describe("a typed call continued in another handle", () => {
  it("a takeover of its state wrapped in a TypedCall gives the typed result, its output continued after the last delivered item", async () => {
    const call = echo.count({ to: 5, delayMs: 0 });
    const items = (await call)[Symbol.asyncIterator]();
    expect(await items.next()).toEqual({ done: false, value: 0 });
    expect(await items.next()).toEqual({ done: false, value: 1 });
    // The item held at the detach (1) is not delivered yet: the takeover starts with it again.
    const state = call.invocation.detach();
    expect(state).toBeDefined();
    const again = new TypedCall<CallResult<typeof echoContract, "count">>(client.takeover(state!));
    const rest: number[] = [];
    for await (const n of await again) rest.push(n);
    expect(rest).toEqual([1, 2, 3, 4]);
    expect(await again.finished).toEqual({ kind: "success" });
  });
});

/**
 * An invocation-wide cancel of a method that has not returned its result, against the real
 * server on loopback. v1 cancels streams, and before its result a method has no stream but its
 * inputs: with none open, nothing can reach it. The cancel settles `not-reached` once the server
 * has answered what it was sent and no result came within `cancelConfirmTimeoutMs`, the runtime
 * leaves, and the server gives the method up after its detached timeout. A method that returns
 * within that time still has its result's streams cancelled (docs/protocol/client.md §10a). One
 * whose open input the cancel ends is waited for `cancelReturnTimeoutMs` once the server ended
 * that input: a method that never reads it is not stopped by it, and the cancel is `not-reached`
 * with `inputsEnded` (before, it waited as long as the method ran); one that returns within that
 * time without any stream cut is reported `invocation-succeeded`, as the server records it.
 */
import { defineCatalogue, implement } from "@golem-stream/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, defineAgentType, t, type CancelOutcome, type Invocation } from "../src/index.js";
import { startServer, TOKEN } from "./support/embedded.js";

const CONFIRM_MS = 300;

const edge = defineAgentType({
  name: "edge",
  constructor: t.record({}),
  methods: {
    hang: { params: t.record({}), result: t.string() },
    readThenHang: { params: t.record({ data: t.stream(t.string()) }), result: t.string() },
    late: { params: t.record({}), result: t.stream(t.u32()) },
    deaf: { params: t.record({ data: t.stream(t.string()) }), result: t.string() },
  },
});

interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
}
function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((res) => (resolve = res));
  return { promise, resolve };
}

/** What the methods report, renewed by each test. */
let seen = {
  started: deferred(),
  /** The method's signal aborted: the server gave it up (or ended the invocation). */
  givenUp: deferred(),
  /** The items `readThenHang` read, once its input ended. */
  inputRead: deferred<string[]>(),
  /** `late` returns once this resolves; its stream's producer reports its signal's abort. */
  release: deferred(),
  producerStopped: deferred(),
};
const renew = (): void => {
  seen = {
    started: deferred(),
    givenUp: deferred(),
    inputRead: deferred<string[]>(),
    release: deferred(),
    producerStopped: deferred(),
  };
};

const never = new Promise<never>(() => undefined);

const EDGE = implement(edge, {
  async hang(ctx) {
    ctx.signal.addEventListener("abort", () => seen.givenUp.resolve());
    seen.started.resolve();
    return never;
  },
  async readThenHang(ctx, { data }) {
    ctx.signal.addEventListener("abort", () => seen.givenUp.resolve());
    const items: string[] = [];
    for await (const item of data) items.push(item);
    seen.inputRead.resolve(items);
    return never;
  },
  async deaf(ctx) {
    // Never reads its input: ending it on the server changes nothing here.
    ctx.signal.addEventListener("abort", () => seen.givenUp.resolve());
    seen.started.resolve();
    await seen.release.promise;
    return "returned anyway";
  },
  async late() {
    seen.started.resolve();
    await seen.release.promise;
    return async (writer) => {
      writer.signal.addEventListener("abort", () => seen.producerStopped.resolve());
      for (let at = 0; !writer.signal.aborted; at++) await writer.write(at);
    };
  },
});

let server: Awaited<ReturnType<typeof startServer>>;
beforeAll(async () => {
  server = await startServer({
    agents: defineCatalogue({ applications: { app: { prod: [EDGE] } } }),
    limits: { detachedSessionTimeoutMs: 200 },
  });
});
afterAll(async () => server.dispose());

const where = { application: "app", environment: "prod" } as const;
const client = (cancelConfirmTimeoutMs = CONFIRM_MS) => createClient({ url: server.url, token: TOKEN, cancelConfirmTimeoutMs });

/** Every cancel event the handle reports. */
function events(call: Invocation): string[] {
  const list: string[] = [];
  call.on("cancelDelivered", () => list.push("delivered"));
  call.on("cancelUndelivered", () => list.push("undelivered"));
  call.on("cancelNotReached", () => list.push("not-reached"));
  return list;
}

const hangCall = (): Invocation =>
  client().invoke({
    ...where,
    agentType: "edge",
    constructorParameters: { kind: "record", value: { fields: [] } },
    method: "hang",
    methodParameters: { kind: "record", value: { fields: [] } },
  });

describe("a cancel before the method returned its result", () => {
  it("no stream open: settles not-reached, the runtime leaves, and the server gives the method up", async () => {
    renew();
    const call = hangCall();
    const reported = events(call);
    await seen.started.promise;
    const outcome: CancelOutcome = await call.cancel("the caller gave up");
    expect(outcome).toEqual({ kind: "not-reached" });
    expect(reported).toEqual(["not-reached"]);
    await expect(call.result).rejects.toMatchObject({ kind: "aborted" });
    // No attachment is left, so the server's detached timeout runs and fails the method.
    await seen.givenUp.promise;
    expect(await call.cancel()).toEqual({ kind: "not-reached" });
  });

  it("a typed call's invocation.cancel() settles the same way", async () => {
    renew();
    const agent = await client().connect(edge, { ...where, constructorArgs: {} });
    const call = agent.hang({});
    await seen.started.promise;
    expect(await call.invocation.cancel()).toEqual({ kind: "not-reached" });
    await expect(call).rejects.toMatchObject({ kind: "aborted" });
    await seen.givenUp.promise;
  });

  it("an input that had ended is no way in either: not-reached", async () => {
    renew();
    const agent = await client().connect(edge, { ...where, constructorArgs: {} });
    const call = agent.readThenHang({ data: ["a", "b"] });
    const reported = events(call.invocation);
    expect(await seen.inputRead.promise).toEqual(["a", "b"]);
    expect(await call.invocation.cancel()).toEqual({ kind: "not-reached" });
    expect(reported).toEqual(["not-reached"]);
    await seen.givenUp.promise;
  });

  it("a result that comes within cancelConfirmTimeoutMs still has its streams cancelled: delivered", async () => {
    renew();
    // Long enough that the result always comes first: the wait ends with it, not with the time.
    const call = client(60_000).invoke({
      ...where,
      agentType: "edge",
      constructorParameters: { kind: "record", value: { fields: [] } },
      method: "late",
      methodParameters: { kind: "record", value: { fields: [] } },
    });
    const reported = events(call);
    await seen.started.promise;
    const outcome = call.cancel();
    seen.release.resolve();
    expect(await outcome).toEqual({ kind: "delivered" });
    expect(reported).toEqual(["delivered"]);
    await seen.producerStopped.promise;
  });
});

describe("a cancel that ends an input the method never reads", () => {
  /** An input that yields one line, then stays open until the runtime stops reading it. */
  async function* openLines(): AsyncGenerator<string> {
    yield "a";
    await never;
  }

  it("the method does not return: not-reached with inputsEnded after cancelReturnTimeoutMs, and the server gives it up", async () => {
    renew();
    const agent = await createClient({ url: server.url, token: TOKEN, cancelReturnTimeoutMs: CONFIRM_MS }).connect(edge, {
      ...where,
      constructorArgs: {},
    });
    const call = agent.deaf({ data: openLines() });
    const reported: unknown[] = [];
    call.invocation.on("cancelNotReached", (event) => reported.push(event));
    await call.invocation.accepted;
    await seen.started.promise;
    expect(await call.invocation.cancel()).toEqual({ kind: "not-reached", inputsEnded: true });
    expect(reported).toEqual([{ inputsEnded: true }]);
    await expect(call).rejects.toMatchObject({ kind: "aborted" });
    // The runtime left: the server's detached timeout gives the method up, which never returned.
    await seen.givenUp.promise;
  });

  it("the method returns anyway: invocation-succeeded, as the server records it, not delivered", async () => {
    renew();
    const agent = await client().connect(edge, { ...where, constructorArgs: {} });
    const call = agent.deaf({ data: openLines() });
    const reported: string[] = [];
    call.invocation.on("cancelInvocationSucceeded", () => reported.push("invocation-succeeded"));
    call.invocation.on("cancelDelivered", () => reported.push("delivered"));
    await call.invocation.accepted;
    await seen.started.promise;
    const outcome = call.invocation.cancel();
    seen.release.resolve();
    expect(await outcome).toEqual({ kind: "invocation-succeeded" });
    expect(reported).toEqual(["invocation-succeeded"]);
    await expect(call).rejects.toMatchObject({ kind: "aborted" });
  });
});

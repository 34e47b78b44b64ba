/**
 * An event listener that throws is the application's bug: while the call's outcome is open it
 * fails the call with `invalid-argument` naming the event (its error the `cause`), the other
 * listeners still run, and nothing is blamed on the server; once the outcome is decided it is
 * rethrown asynchronously, as an uncaught exception. The real server on loopback.
 */
import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClientError, createClient, inputStream, type Client, type OutputStream } from "../src/index.js";
import { demo, record, u32 } from "./support/demo.js";
import { TOKEN, startServerWithClient, type TestServer } from "./support/embedded.js";

let server: TestServer;
let client: Client;
beforeAll(async () => ({ server, client } = await startServerWithClient()));
afterAll(async () => server.dispose());

const bug = new Error("a bug in the application's listener");
const throwBug = (): never => {
  throw bug;
};

async function failure(promise: Promise<unknown>): Promise<ClientError> {
  const error: unknown = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (!(error instanceof ClientError)) throw new Error(`expected a ClientError, got ${String(error)}`);
  return error;
}

function expectListenerFailure(error: ClientError, event: string): void {
  expect(error.kind).toBe("invalid-argument");
  expect(error.code).toBeUndefined();
  expect(error.message).toBe(`a listener of the ${event} event threw: ${bug.message}`);
  expect(error.cause).toBe(bug);
}

/** A loopback port nothing listens on: every connection to it is refused. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

describe("a listener that throws while the call's outcome is open fails the call with invalid-argument", () => {
  it("accepted: not a server violation, and the other listeners still run", async () => {
    const call = client.invoke({ ...demo, method: "count", methodParameters: record(u32(3), u32(0)) });
    const seen: string[] = [];
    call.on("accepted", throwBug);
    call.on("accepted", (event) => seen.push(event.operation));
    expectListenerFailure(await failure(call.finished), "accepted");
    expect(seen).toEqual(["start"]);
    expect((await call.accepted).operation).toBe("start");
  });

  it("stream", async () => {
    const call = client.invoke({ ...demo, method: "count", methodParameters: record(u32(3), u32(0)) });
    call.on("stream", throwBug);
    expectListenerFailure(await failure(call.finished), "stream");
    expectListenerFailure(await failure(call.result), "stream");
  });

  it("stream, at each of a result's two streams: the call fails once, and both streams end", async () => {
    const data = (async function* () {
      yield new TextEncoder().encode("a line\n");
    })();
    const call = client.invoke({ ...demo, method: "split", methodParameters: record(inputStream.bytes(data)) });
    const heard: OutputStream[] = [];
    call.on("stream", throwBug);
    call.on("stream", (stream) => heard.push(stream));
    expectListenerFailure(await failure(call.finished), "stream");
    // Announced in one message: the first one's listener failed the call, so the second is
    // not told to anyone (nor thrown at again), and ends with the call like the first.
    expect(heard).toHaveLength(1);
    expect(call.streams).toHaveLength(2);
    for (const outcome of await Promise.all(call.streams.map((stream) => stream.ended)))
      expect(outcome).toMatchObject({ kind: "detached" });
  });

  it("inputFailed: the call fails instead of hanging", async () => {
    const failing = (async function* () {
      yield "a";
      throw new Error("the source broke");
    })();
    const call = client.invoke({ ...demo, method: "reverse", methodParameters: record(inputStream.strings(failing)) });
    call.on("inputFailed", throwBug);
    expectListenerFailure(await failure(call.finished), "inputFailed");
  });

  it("reconnecting: the runtime stops without another attempt", async () => {
    const port = await closedPort();
    const unreachable = createClient({ url: `http://127.0.0.1:${port}`, token: TOKEN, reconnect: { maxAttempts: 5 } });
    const call = unreachable.invoke({ ...demo, method: "count", methodParameters: record(u32(3), u32(0)) });
    let reconnects = 0;
    call.on("reconnecting", () => {
      reconnects++;
      throw bug;
    });
    expectListenerFailure(await failure(call.finished), "reconnecting");
    expect(reconnects).toBe(1);
  });

  it("revoked: the call fails with the listener's error, not as a failure of the runtime", async () => {
    const call = client.invoke({ ...demo, method: "count", methodParameters: record(u32(100_000), u32(10)) });
    call.on("revoked", throwBug);
    await call.accepted;
    const other = client.takeover(call.state!);
    expectListenerFailure(await failure(call.finished), "revoked");
    await other.cancel();
  });
});

describe("a listener that throws once the call's outcome is decided", () => {
  it("cancelDelivered: rethrown asynchronously, as an uncaught exception", async () => {
    // The test runner's own handlers would count it as this file's failure: set aside meanwhile.
    const runners = process.listeners("uncaughtException");
    process.removeAllListeners("uncaughtException");
    const uncaught = new Promise<unknown>((resolve) => process.once("uncaughtException", resolve));
    try {
      const call = client.invoke({ ...demo, method: "count", methodParameters: record(u32(100_000), u32(10)) });
      call.on("cancelDelivered", throwBug);
      await call.accepted;
      expect(await call.cancel()).toEqual({ kind: "delivered" });
      expect(await uncaught).toBe(bug);
      expect((await failure(call.finished)).kind).toBe("aborted");
    } finally {
      for (const listener of runners) process.on("uncaughtException", listener);
    }
  });
});

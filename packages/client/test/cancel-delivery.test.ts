/**
 * An invocation-wide cancel issued while no connection is accepted, against
 * an in-memory server scripted message by message: the caller's outcome is
 * immediate, the cancellations follow on the next accepted connection, and
 * the runtime reports whether they got there (docs/protocol/client.md §10).
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ClientMessage, InvocationStart, ResumeAttach } from "@golem-stream/wire";
import { inputStream, type CancelOutcome, type ClientError, type Invocation } from "../src/index.js";
import type { ServerSide } from "./support/memory-transport.js";
import {
  SESSION,
  STREAM_IN,
  echo,
  acceptanceOf,
  inputMapping,
  isResume,
  isStart,
  memoryClient,
  nextStart,
  outputMapping,
  provisionalRefOf,
  streamResult,
} from "./support/fixtures.js";

type Transport = ReturnType<typeof memoryClient>["transport"];

/** An input that yields one string, then waits (without a timer) until it is cancelled. */
const openInput = () =>
  inputStream.strings(
    new ReadableStream<string>({
      start(controller) {
        controller.enqueue("a");
      },
    }),
  );

const reverseCall = (client: ReturnType<typeof memoryClient>["client"]): Invocation =>
  client.invoke({ ...echo, method: "reverse", methodParameters: { kind: "record", value: { fields: [openInput()] } } });

/** Everything the handle reports about the cancel, and whether its promise has settled yet. */
function watch(call: Invocation, outcome: Promise<CancelOutcome>) {
  const seen = { settled: false, delivered: 0, undelivered: [] as ClientError[] };
  void outcome.then(() => (seen.settled = true));
  call.on("cancelDelivered", () => seen.delivered++);
  call.on("cancelUndelivered", ({ error }) => seen.undelivered.push(error));
  return seen;
}

const cancels = (server: ServerSide): ClientMessage[] => server.received.filter((m) => m.type === "streamCancel");

/** The first connection: the start accepted with its input on channel 1, the result's stream on channel 2. */
async function acceptedReverse(transport: Transport) {
  const { server, start } = await nextStart(transport);
  server.send(acceptanceOf(start, [inputMapping(1, provisionalRefOf(start))]));
  server.send({ type: "invocationResult", mappings: [outputMapping(2)], result: streamResult() });
  // The input's first item is on its way; the server never acknowledges it.
  await server.waitUntil((m) => m.type === "inputStreamItem");
  return { server, start };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("a cancel during a reconnect wait", () => {
  it("resumes, cancels every stream that has not ended (input without resending its items, output once the result maps it), then detaches", async () => {
    const { client, transport } = memoryClient();
    const call = reverseCall(client);
    const { server: first } = await acceptedReverse(transport);
    first.drop();
    const outcome = call.cancel();
    const seen = watch(call, outcome);
    // The caller's outcome does not wait for the server.
    await expect(call.finished).rejects.toMatchObject({ kind: "aborted" });
    expect(call.signal.aborted).toBe(true);
    expect(seen.settled).toBe(false);

    const second = await transport.nextConnection();
    const resume = (await second.waitUntil(isResume)) as ResumeAttach;
    second.send({
      type: "invocationAccepted",
      attemptId: resume.attemptId,
      idempotencyKey: "k",
      mappings: [inputMapping(5, undefined, 0n, false, STREAM_IN)],
      sessionToken: SESSION,
    });
    await second.waitUntil((m) => m.type === "streamCancel");
    // The result's stream has no channel on this connection until the re-sent result maps it.
    expect(second.closed).toBe(false);
    expect(seen.settled).toBe(false);
    second.send({ type: "invocationResult", mappings: [outputMapping(6)], result: streamResult() });

    expect(await outcome).toEqual({ kind: "delivered" });
    expect(second.received).toEqual([
      resume,
      { type: "streamCancel", channel: 5, reason: "cancelled" },
      { type: "streamCancel", channel: 6, reason: "cancelled" },
    ]);
    expect(second.closed).toBe(true);
    expect(seen).toMatchObject({ delivered: 1, undelivered: [] });
    expect(transport.connections).toHaveLength(2);
    // A second cancel is the same cancel.
    expect(await call.cancel()).toEqual({ kind: "delivered" });
  });

  it("streams the server has ended need no cancel: delivered at the acceptance, before the result is re-sent", async () => {
    const { client, transport } = memoryClient();
    const call = reverseCall(client);
    const { server: first } = await acceptedReverse(transport);
    first.send({ type: "outputStreamEnd", channel: 2, outcome: { kind: "error", code: "producer-error", message: "gone" }, sequence: 0n });
    first.drop();
    const outcome = call.cancel();
    const second = await transport.nextConnection();
    const resume = (await second.waitUntil(isResume)) as ResumeAttach;
    // The input's terminal is durable (the server cancelled it): nothing is left open.
    second.send({
      type: "invocationAccepted",
      attemptId: resume.attemptId,
      idempotencyKey: "k",
      mappings: [inputMapping(5, undefined, 0n, true, STREAM_IN)],
      sessionToken: SESSION,
    });
    expect(await outcome).toEqual({ kind: "delivered" });
    expect(second.received).toEqual([resume]);
    expect(second.closed).toBe(true);

    // The same, ended by the invocation finishing before the result could map the stream.
    const other = memoryClient();
    const call2 = reverseCall(other.client);
    const { server: first2 } = await acceptedReverse(other.transport);
    first2.drop();
    const outcome2 = call2.cancel();
    const second2 = await other.transport.nextConnection();
    const resume2 = (await second2.waitUntil(isResume)) as ResumeAttach;
    second2.send({
      type: "invocationAccepted",
      attemptId: resume2.attemptId,
      idempotencyKey: "k",
      mappings: [inputMapping(5, undefined, 0n, true, STREAM_IN)],
      sessionToken: SESSION,
    });
    second2.send({ type: "invocationFinished", outcome: { kind: "failure", code: "invocation-failed", message: "input cancelled" } });
    expect(await outcome2).toEqual({ kind: "delivered" });
    await expect(call2.finished).rejects.toMatchObject({ kind: "aborted" });
  });

  it("gives up after the reconnect policy's attempts: cancelUndelivered with connection-lost, no timer and no connection left", async () => {
    vi.useFakeTimers();
    const { client, transport } = memoryClient({ reconnect: { random: () => 0.5, initialDelayMs: 100, maxAttempts: 3 } });
    const call = reverseCall(client);
    const { server: first } = await acceptedReverse(transport);
    transport.refusals.push(...Array.from({ length: 10 }, () => new Error("ECONNREFUSED")));
    first.drop();
    const outcome = call.cancel();
    const seen = watch(call, outcome);
    const reconnects: number[] = [];
    call.on("reconnecting", ({ failures }) => reconnects.push(failures));
    await vi.runAllTimersAsync();
    expect(await outcome).toMatchObject({ kind: "undelivered", error: { kind: "connection-lost" } });
    expect(seen.undelivered).toHaveLength(1);
    expect(seen.delivered).toBe(0);
    expect(reconnects).toEqual([1, 2, 3]);
    // Three refused attempts after the first connection, then nothing: no retry is scheduled.
    expect(transport.refusals).toHaveLength(10 - 3);
    expect(vi.getTimerCount()).toBe(0);
    expect(transport.connections.every((connection) => connection.closed)).toBe(true);
    await expect(call.finished).rejects.toMatchObject({ kind: "aborted" });
  });

  it("detach() stops a delivery under way: cancelUndelivered with aborted, the connection closed", async () => {
    const { client, transport } = memoryClient();
    const call = reverseCall(client);
    const { server: first } = await acceptedReverse(transport);
    first.drop();
    const outcome = call.cancel();
    const second = await transport.nextConnection();
    await second.waitUntil(isResume);
    expect(call.detach()).toMatchObject({ sessionToken: SESSION });
    expect(await outcome).toMatchObject({ kind: "undelivered", error: { kind: "aborted" } });
    expect(second.closed).toBe(true);
  });

  it("a resume that is refused (another process took the session over): cancelUndelivered with the rejection", async () => {
    const { client, transport } = memoryClient();
    const call = reverseCall(client);
    const { server: first } = await acceptedReverse(transport);
    first.drop();
    const outcome = call.cancel();
    const second = await transport.nextConnection();
    const resume = (await second.waitUntil(isResume)) as ResumeAttach;
    second.send({ type: "invocationRejected", attemptId: resume.attemptId, code: "superseded", message: "taken over", retryable: false });
    expect(await outcome).toMatchObject({ kind: "undelivered", error: { kind: "rejected", code: "superseded" } });
    expect(transport.connections).toHaveLength(2);
  });
});

describe("a cancel before the first acceptance", () => {
  it("the start never left this process: delivered at once, nothing sent", async () => {
    const { client, transport } = memoryClient();
    const call = reverseCall(client);
    expect(await call.cancel()).toEqual({ kind: "delivered" });
    await expect(call.finished).rejects.toMatchObject({ kind: "aborted" });
    expect(transport.connections.flatMap((connection) => connection.received)).toEqual([]);
  });

  it("an uncertain start is retried exactly; accepted, every stream is cancelled", async () => {
    const { client, transport } = memoryClient();
    const call = reverseCall(client);
    const { server: first, start: start } = await nextStart(transport);
    first.drop(); // the server may have accepted it
    const outcome = call.cancel();
    await expect(call.accepted).rejects.toMatchObject({ kind: "aborted" });
    const second = await transport.nextConnection();
    expect(await second.waitUntil(isStart)).toEqual(start);
    second.send(acceptanceOf(start, [inputMapping(1, provisionalRefOf(start))]));
    await second.waitUntil((m) => m.type === "streamCancel");
    expect(second.closed).toBe(false); // its result, and so its output streams, may follow
    second.send({ type: "invocationResult", mappings: [outputMapping(2)], result: streamResult() });
    expect(await outcome).toEqual({ kind: "delivered" });
    expect(second.received).toEqual([
      start,
      { type: "streamCancel", channel: 1, reason: "cancelled" },
      { type: "streamCancel", channel: 2, reason: "cancelled" },
    ]);
    expect(second.closed).toBe(true);
  });

  it("an uncertain start that turns out rejected: nothing to cancel, no new attempt", async () => {
    for (const retryable of [false, true]) {
      const { client, transport } = memoryClient();
      const call = reverseCall(client);
      const { server: first, start: start } = await nextStart(transport);
      first.drop();
      const outcome = call.cancel();
      const second = await transport.nextConnection();
      await second.waitUntil(isStart);
      second.send({ type: "invocationRejected", attemptId: start.attemptId, code: "overloaded", message: "busy", retryable });
      expect(await outcome).toEqual({ kind: "delivered" });
      expect(transport.connections).toHaveLength(2);
      expect(second.closed).toBe(true);
    }
  });
});

/** `reverse` accepted with its input on channel 1; its first item sent, no result yet. */
async function acceptedWithoutResult(transport: Transport): Promise<ServerSide> {
  const { server, start } = await nextStart(transport);
  server.send(acceptanceOf(start, [inputMapping(1, provisionalRefOf(start))]));
  await server.waitUntil((m) => m.type === "inputStreamItem");
  return server;
}

/** `count` accepted with its result's stream on channel 2, on a connection whose server does not answer the client's close. */
async function countWithSilentClose(options: Parameters<typeof memoryClient>[0] = {}) {
  const { client, transport } = memoryClient(options);
  const call = client.invoke({ ...echo, method: "count", methodParameters: { kind: "record", value: { fields: [] } } });
  const server = await transport.nextConnection();
  server.unansweredClose = true;
  const start = (await server.waitUntil(isStart)) as InvocationStart;
  server.send(acceptanceOf(start));
  server.send({ type: "invocationResult", mappings: [outputMapping(2)], result: streamResult() });
  await call.result;
  return { call, server, transport };
}

/**
 * The next connection: a resume, accepted, its result re-sent on channel 4; the client then
 * sends the cancellation there before anything else and closes. The server has not answered yet.
 */
async function cancelledAgainOn(transport: Transport): Promise<ServerSide> {
  const next = await transport.nextConnection();
  next.unansweredClose = true;
  const resume = (await next.waitUntil(isResume)) as ResumeAttach;
  next.send({ type: "invocationAccepted", attemptId: resume.attemptId, idempotencyKey: "k", mappings: [], sessionToken: SESSION });
  next.send({ type: "invocationResult", mappings: [outputMapping(4)], result: streamResult() });
  await next.waitUntil((m) => m.type === "streamCancel");
  await new Promise((resolve) => setImmediate(resolve));
  expect(next.received).toEqual([resume, { type: "streamCancel", channel: 4, reason: "cancelled" }]);
  expect(next.closeRequested).toBe(true);
  return next;
}

describe("a cancel on an accepted connection", () => {
  it("waits for the result (its streams exist only from it on), then cancels them too", async () => {
    const { client, transport } = memoryClient();
    const call = client.invoke({ ...echo, method: "count", methodParameters: { kind: "record", value: { fields: [] } } });
    const { server, start } = await nextStart(transport);
    server.send(acceptanceOf(start));
    await call.accepted;
    const outcome = call.cancel();
    const seen = watch(call, outcome);
    await expect(call.result).rejects.toMatchObject({ kind: "aborted" });
    expect(server.closed).toBe(false);
    expect(seen.settled).toBe(false);
    server.send({ type: "invocationResult", mappings: [outputMapping(2)], result: streamResult() });
    expect(await outcome).toEqual({ kind: "delivered" });
    expect(cancels(server)).toEqual([{ type: "streamCancel", channel: 2, reason: "cancelled" }]);
    expect(server.closed).toBe(true);
  });

  it("delivered only once the server answered the close behind the cancellations; after a drop they go again on a new connection", async () => {
    for (const answer of ["close frame", "drop"] as const) {
      const { call, server, transport } = await countWithSilentClose();
      const outcome = call.cancel();
      const seen = watch(call, outcome);
      await server.waitUntil((m) => m.type === "streamCancel");
      // Sent and the close begun, but the server has not answered: nothing is known yet.
      await new Promise((resolve) => setImmediate(resolve));
      expect(server.closeRequested).toBe(true);
      expect(seen.settled).toBe(false);
      if (answer === "close frame") {
        server.close(1000);
        expect(await outcome).toEqual({ kind: "delivered" });
        expect(seen.delivered).toBe(1);
        expect(transport.connections).toHaveLength(1);
      } else {
        server.drop();
        const second = await cancelledAgainOn(transport);
        expect(seen.settled).toBe(false);
        second.close(1000);
        expect(await outcome).toEqual({ kind: "delivered" });
        expect(seen).toMatchObject({ delivered: 1, undelivered: [] });
      }
    }
  });

  it("a close the server does not answer within cancelConfirmTimeoutMs: the cancellations go first on a new connection", async () => {
    const { call, server, transport } = await countWithSilentClose({ cancelConfirmTimeoutMs: 20 });
    const outcome = call.cancel();
    const second = await cancelledAgainOn(transport);
    expect(cancels(server)).toEqual([{ type: "streamCancel", channel: 2, reason: "cancelled" }]);
    second.close(1000);
    expect(await outcome).toEqual({ kind: "delivered" });
  });

  it("undelivered once the reconnect policy is spent on closes nobody answers", async () => {
    const { call, transport } = await countWithSilentClose({
      cancelConfirmTimeoutMs: 20,
      reconnect: { random: () => 0, initialDelayMs: 1, maxAttempts: 2 },
    });
    const outcome = call.cancel();
    for (let attempt = 0; attempt < 2; attempt++) {
      const next = await transport.nextConnection();
      next.unansweredClose = true;
      const resume = (await next.waitUntil(isResume)) as ResumeAttach;
      next.send({ type: "invocationAccepted", attemptId: resume.attemptId, idempotencyKey: "k", mappings: [], sessionToken: SESSION });
      next.send({ type: "invocationResult", mappings: [outputMapping(4)], result: streamResult() });
    }
    expect(await outcome).toMatchObject({
      kind: "undelivered",
      error: { kind: "connection-lost", message: expect.stringContaining("did not confirm the cancellations within 20 ms") },
    });
    expect(transport.connections).toHaveLength(3);
  });

  it("no result yet and the server answers nothing within cancelConfirmTimeoutMs: the cancellations go first on a new connection", async () => {
    const { client, transport } = memoryClient({ cancelConfirmTimeoutMs: 20 });
    const call = reverseCall(client);
    const first = await acceptedWithoutResult(transport);
    const outcome = call.cancel();
    await first.waitUntil((m) => m.type === "streamCancel");
    // The server never reads it (its agent stopped taking input): the connection is left.
    const second = await transport.nextConnection();
    const resume = (await second.waitUntil(isResume)) as ResumeAttach;
    expect(first.closed).toBe(true);
    second.send({
      type: "invocationAccepted",
      attemptId: resume.attemptId,
      idempotencyKey: "k",
      mappings: [inputMapping(5, undefined, 0n, false, STREAM_IN)],
      sessionToken: SESSION,
    });
    await second.waitUntil((m) => m.type === "streamCancel");
    expect(second.received).toEqual([resume, { type: "streamCancel", channel: 5, reason: "cancelled" }]);
    second.send({ type: "inputStreamAck", channel: 5, highestContiguousSequence: 0n, mappings: [], terminal: true });
    second.send({ type: "invocationFinished", outcome: { kind: "failure", code: "invocation-failed", message: "input cancelled" } });
    expect(await outcome).toEqual({ kind: "delivered" });
  });

  it("no result yet, but the server answered the cancellations: the delivery waits on the same connection", async () => {
    const { client, transport } = memoryClient({ cancelConfirmTimeoutMs: 20 });
    const call = reverseCall(client);
    const first = await acceptedWithoutResult(transport);
    const outcome = call.cancel();
    await first.waitUntil((m) => m.type === "streamCancel");
    first.send({ type: "inputStreamAck", channel: 1, highestContiguousSequence: 0n, mappings: [], terminal: true });
    await new Promise((resolve) => setTimeout(resolve, 100)); // five times the timeout
    expect(first.closed).toBe(false);
    first.send({ type: "invocationFinished", outcome: { kind: "failure", code: "invocation-failed", message: "input cancelled" } });
    expect(await outcome).toEqual({ kind: "delivered" });
    expect(transport.connections).toHaveLength(1);
  });

  it("no input open and no result within cancelConfirmTimeoutMs: not-reached, nothing sent, the connection closed", async () => {
    const { client, transport } = memoryClient({ cancelConfirmTimeoutMs: 20 });
    const call = client.invoke({ ...echo, method: "count", methodParameters: { kind: "record", value: { fields: [] } } });
    const { server, start } = await nextStart(transport);
    server.send(acceptanceOf(start));
    await call.accepted;
    const reported = new Promise<void>((resolve) => call.on("cancelNotReached", () => resolve()));
    expect(await call.cancel()).toEqual({ kind: "not-reached" });
    await reported;
    expect(server.received).toEqual([start]);
    expect(server.closeRequested).toBe(true);
    expect(transport.connections).toHaveLength(1);
  });

  it("a cancel after the invocation is over sends nothing", async () => {
    const { client, transport } = memoryClient();
    const call = client.invoke({ ...echo, method: "count", methodParameters: { kind: "record", value: { fields: [] } } });
    const { server, start } = await nextStart(transport);
    server.send(acceptanceOf(start));
    server.send({ type: "invocationResult", mappings: [], result: { kind: "none" } });
    server.send({ type: "invocationFinished", outcome: { kind: "success" } });
    await call.finished;
    expect(await call.cancel()).toEqual({ kind: "already-over" });
    expect(cancels(server)).toEqual([]);
  });
});

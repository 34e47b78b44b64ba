/**
 * The persistence contract (docs/protocol/client.md §2): what `onCheckpoint`
 * is handed and when — the frozen start before it is sent, the session after
 * acceptance — how a saved state continues in another process (the exact
 * retry of a pending start, a stream whose terminal cursor was saved), and
 * that a failing callback stops delivery instead of being ignored.
 */
import { describe, expect, it } from "vitest";
import type { ClientMessage, InvocationStart, ResumeAttach } from "@golem-stream/wire";
import { ClientError, inputStream, type ResumeState } from "../src/index.js";
import {
  SESSION,
  acceptanceOf,
  cursor,
  echo,
  inputMapping,
  isResume,
  isStart,
  layoutStream,
  memoryClient,
  nextStart,
  noParams,
  okEnd,
  outputMapping,
  provisionalRefOf,
  streamResult,
  tick,
  u32Item,
} from "./support/fixtures.js";

const oneInput = () => ({ kind: "record", value: { fields: [inputStream.strings(["a", "b"])] } }) as const;

function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe("the frozen start is saved before it is sent", () => {
  it("hands the exact start to onCheckpoint and sends nothing until the callback finished", async () => {
    const { client, transport } = memoryClient();
    const states: ResumeState[] = [];
    const release = deferred();
    const call = client.invoke({
      ...echo,
      method: "reverse",
      methodParameters: oneInput(),
      idempotencyKey: "key-1",
      onCheckpoint: async (state) => {
        states.push(state);
        if (states.length === 1) await release.promise;
      },
    });
    for (let i = 0; i < 5; i++) await tick();
    expect(transport.connections).toHaveLength(0);
    expect(states).toHaveLength(1);
    const pending = states[0]!;
    expect(pending.sessionToken).toBeUndefined();
    expect(pending.outputCursors).toEqual([]);
    expect(pending.idempotencyKey).toBe("key-1");
    release.resolve();

    const { server, start } = await nextStart(transport);
    // The very descriptor on the wire, provisional references included.
    expect(start).toEqual(pending.pendingOperation);
    expect(pending.selector).toEqual(start.selector);
    server.send({ type: "invocationAccepted", attemptId: start.attemptId, idempotencyKey: "key-1", mappings: [], sessionToken: SESSION });
    await call.accepted;
    await tick();
    // After acceptance: the session, no pending operation.
    expect(states.at(-1)).toEqual({ sessionToken: SESSION, outputCursors: [], selector: start.selector, idempotencyKey: "key-1" });
    call.cancel();
  });

  it("keeps the same frozen start (same attempt id) across an uncertain loss, and saves a fresh one after a retryable rejection", async () => {
    const { client, transport } = memoryClient();
    const states: ResumeState[] = [];
    const call = client.invoke({ ...echo, method: "reverse", methodParameters: oneInput(), onCheckpoint: (s) => void states.push(s) });
    const { server: first, start: start1 } = await nextStart(transport);
    first.drop();
    const second = await transport.nextConnection();
    expect(await second.waitUntil(isStart)).toEqual(start1);
    expect(states.map((s) => s.pendingOperation)).toEqual([start1]);
    second.send({ type: "invocationRejected", attemptId: start1.attemptId, code: "overloaded", message: "busy", retryable: true });
    const { server: third, start: start2 } = await nextStart(transport);
    expect(start2.attemptId).not.toBe(start1.attemptId);
    expect(states.at(-1)?.pendingOperation).toEqual(start2);
    call.cancel();
  });
});

describe("continuing a pending start in another process", () => {
  async function frozenStart(): Promise<{ state: ResumeState; start: InvocationStart }> {
    const { client, transport } = memoryClient();
    let saved: ResumeState | undefined;
    const call = client.invoke({ ...echo, method: "reverse", methodParameters: oneInput(), onCheckpoint: (s) => void (saved = s) });
    const { server, start } = await nextStart(transport);
    // The process dies here, before any answer.
    call.detach();
    return { state: saved!, start };
  }

  it("retries the exact start with the same attempt id and cancels the input whose source stayed behind", async () => {
    const { state, start } = await frozenStart();
    const { client, transport } = memoryClient();
    const states: ResumeState[] = [];
    const call = client.takeover(state, { onCheckpoint: (s) => void states.push(s) });
    const server = await transport.nextConnection();
    expect(await server.waitUntil(isStart)).toEqual(start);
    server.send(acceptanceOf(start, [inputMapping(1, provisionalRefOf(start), 1n)]));
    expect(await call.accepted).toMatchObject({ operation: "start", attemptId: start.attemptId });
    expect(await server.waitUntil((m: ClientMessage) => m.type === "streamCancel")).toEqual({
      type: "streamCancel",
      channel: 1,
      reason: "source-unavailable",
    });
    // Nothing of the input is sent: this process has no source for it.
    expect(server.received.filter((m) => m.type === "inputStreamItem" || m.type === "inputStreamEnd")).toEqual([]);
    expect(states.at(-1)).toMatchObject({ sessionToken: SESSION, outputCursors: [] });
    expect(states.at(-1)?.pendingOperation).toBeUndefined();
    call.cancel();
  });

  it("after a retryable rejection makes a new start attempt: fresh attempt id and provisional references, same call", async () => {
    const { state, start } = await frozenStart();
    const { client, transport } = memoryClient();
    const call = client.takeover(state);
    const first = await transport.nextConnection();
    await first.waitUntil(isStart);
    first.send({ type: "invocationRejected", attemptId: start.attemptId, code: "overloaded", message: "busy", retryable: true });
    const { server: second, start: again } = await nextStart(transport);
    expect(again.attemptId).not.toBe(start.attemptId);
    expect(provisionalRefOf(again)).not.toBe(provisionalRefOf(start));
    expect({ ...again, attemptId: "", methodParameters: null }).toEqual({ ...start, attemptId: "", methodParameters: null });
    second.send(acceptanceOf(again, [inputMapping(1, provisionalRefOf(again))]));
    expect(await second.waitUntil((m: ClientMessage) => m.type === "streamCancel")).toMatchObject({
      channel: 1,
      reason: "source-unavailable",
    });
    call.cancel();
  });

  it("counts the saved descriptor as sent before: a replayed acceptance that is then revoked leads to a fresh resume (protocol 6.1)", async () => {
    const { state, start } = await frozenStart();
    const { client, transport } = memoryClient();
    const call = client.takeover(state);
    const first = await transport.nextConnection();
    await first.waitUntil(isStart);
    first.send(acceptanceOf(start));
    expect(await call.accepted).toMatchObject({ replayed: true });
    first.send({ type: "attachmentRevoked", reason: "replaced" });
    const second = await transport.nextConnection();
    const resume = (await second.waitUntil(isResume)) as ResumeAttach;
    expect(resume).toMatchObject({ operation: "resume", sessionToken: SESSION, outputCursors: [] });
    expect(resume.attemptId).not.toBe(start.attemptId);
    call.cancel();
  });

  it("still refuses a provisional reference that was never part of the start", async () => {
    const { state, start } = await frozenStart();
    const { client, transport } = memoryClient();
    const call = client.takeover(state);
    const server = await transport.nextConnection();
    await server.waitUntil(isStart);
    server.send(acceptanceOf(start, [inputMapping(1, "0dff1c71-f12f-4bb1-996c-23d693bdc825")]));
    await expect(call.finished).rejects.toMatchObject({ kind: "server-violation" });
  });
});

describe("a stream whose terminal cursor was saved", () => {
  const out = layoutStream(0xab);
  const state: ResumeState = {
    sessionToken: SESSION,
    outputCursors: [out.cursor(5, "terminal")],
    selector: { ...echo, method: "count" },
    idempotencyKey: "k",
  };

  async function takenOver(saved: ResumeState) {
    const { client, transport } = memoryClient();
    const states: ResumeState[] = [];
    const call = client.takeover(saved, { onCheckpoint: (s) => void states.push(s) });
    const server = await transport.nextConnection();
    const takeover = (await server.waitUntil(isResume)) as ResumeAttach;
    server.send({ type: "invocationAccepted", attemptId: takeover.attemptId, idempotencyKey: "k", mappings: [], sessionToken: SESSION });
    return { call, server, states };
  }

  it("is complete: the server replays nothing for it, its iterator ends at once and the invocation succeeds", async () => {
    const { call, server, states } = await takenOver(state);
    // The server re-sends the result (announcing the stream) and the finish, nothing else.
    server.send({ type: "invocationResult", mappings: [outputMapping(2, out.token)], result: streamResult(out.token) });
    server.send({ type: "invocationFinished", outcome: { kind: "success" } });
    const result = await call.result;
    const stream = result.kind === "value" ? result.streams[0]! : undefined;
    const items: unknown[] = [];
    for await (const item of stream!) items.push(item);
    expect(items).toEqual([]);
    expect(await stream!.ended).toEqual({ kind: "already-delivered" });
    await expect(call.finished).resolves.toEqual({ kind: "success" });
    // The terminal cursor stays the stream's cursor.
    expect(states.at(-1)?.outputCursors).toEqual([out.cursor(5, "terminal")]);
  });

  it("an item cursor is not complete: a finish without the terminal is still a server violation", async () => {
    const { call, server } = await takenOver({ ...state, outputCursors: [out.cursor(4, "item")] });
    server.send({ type: "invocationResult", mappings: [outputMapping(2, out.token)], result: streamResult(out.token) });
    server.send({ type: "invocationFinished", outcome: { kind: "success" } });
    const result = await call.result;
    const stream = result.kind === "value" ? result.streams[0]! : undefined;
    await expect(stream![Symbol.asyncIterator]().next()).rejects.toMatchObject({ kind: "server-violation", code: "protocol-error" });
    expect(await stream!.ended).toMatchObject({ kind: "detached" });
  });
});

describe("a takeover retrying a resume saved with an older cursor than the checkpoint's", () => {
  it("drops what the replay repeats up to the item the checkpoint's cursor names, and delivers the rest once", async () => {
    const out = layoutStream(0xcd);
    const item = (position: number) => ({
      type: "outputStreamItem" as const,
      channel: 2,
      cursorToken: out.cursor(position, "item"),
      mappings: [],
      sequence: BigInt(position),
      value: { kind: "u32", value: position },
    });
    // The resume was frozen when item 1 was the last delivered; the consumer then read up to
    // item 6 before the process died, and the checkpoint saved item 6's cursor beside it.
    const { client, transport } = memoryClient();
    const saved: ResumeState = {
      sessionToken: SESSION,
      outputCursors: [out.cursor(6, "item")],
      selector: { ...echo, method: "count" },
      idempotencyKey: "k",
      pendingOperation: {
        type: "resumeAttach",
        attemptId: "5c8d2b8e-3f7a-4a43-9f55-0d6a2f3b1c11",
        operation: "resume",
        outputCursors: [out.cursor(1, "item")],
        sessionToken: SESSION,
      },
    };
    const call = client.takeover(saved);
    const server = await transport.nextConnection();
    const resume = (await server.waitUntil(isResume)) as ResumeAttach;
    expect(resume.outputCursors).toEqual([out.cursor(1, "item")]); // retried exactly (protocol §9)
    server.send({ type: "invocationAccepted", attemptId: resume.attemptId, idempotencyKey: "k", mappings: [], sessionToken: SESSION });
    server.send({ type: "invocationResult", mappings: [outputMapping(2, out.token)], result: streamResult(out.token) });
    // The server replays after the resume's cursor: from item 2.
    for (let position = 2; position < 10; position++) server.send(item(position));
    server.send({ type: "outputStreamEnd", channel: 2, cursorToken: out.cursor(10, "terminal"), outcome: { kind: "ok" }, sequence: 10n });
    server.send({ type: "invocationFinished", outcome: { kind: "success" } });
    const result = await call.result;
    const values: unknown[] = [];
    for await (const value of result.kind === "value" ? result.streams[0]!.values() : []) values.push((value as { value: unknown }).value);
    expect(values).toEqual([7, 8, 9]);
    await expect(call.finished).resolves.toEqual({ kind: "success" });
  });
});

describe("a failing persistence callback is never ignored", () => {
  it("before the start: nothing is sent, the handle fails with checkpoint-failed and its cause", async () => {
    const { client, transport } = memoryClient();
    const call = client.invoke({
      ...echo,
      method: "count",
      methodParameters: noParams,
      onCheckpoint: () => {
        throw new Error("disk full");
      },
    });
    const error = await call.finished.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ClientError);
    expect(error).toMatchObject({ kind: "checkpoint-failed", code: undefined, cause: new Error("disk full") });
    await expect(call.accepted).rejects.toBe(error);
    expect(transport.connections).toHaveLength(0);
  });

  it("at a cursor: the consumer's next() throws, queued items are not handed out, nothing is cancelled", async () => {
    const { client, transport } = memoryClient();
    let writes = 0;
    const call = client.invoke({
      ...echo,
      method: "count",
      methodParameters: noParams,
      // The pending start and the acceptance are saved; the first cursor is not.
      onCheckpoint: async () => {
        if (++writes === 3) throw new Error("disk full");
      },
    });
    const { server, start } = await nextStart(transport);
    server.send(acceptanceOf(start));
    server.send({ type: "invocationResult", mappings: [outputMapping(2)], result: streamResult() });
    for (let i = 0; i < 3; i++) {
      server.send(u32Item(i));
    }
    const result = await call.result;
    const iterator = result.kind === "value" ? result.streams[0]![Symbol.asyncIterator]() : undefined;
    expect(await iterator!.next()).toEqual({ done: false, value: { kind: "u32", value: 0 } });
    const error = await iterator!.next().catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: "checkpoint-failed" });
    // Delivery stays stopped; items 1 and 2 are never handed out.
    expect(await iterator!.next()).toEqual({ done: true, value: undefined });
    await expect(call.finished).rejects.toBe(error);
    expect(writes).toBe(3);
    expect(server.received.map((m) => m.type)).toEqual(["invocationStart"]);
  });

  it("after invocationFinished: the consumer observes the end first, and coming back it gets the terminal's failed save", async () => {
    const { client, transport } = memoryClient();
    let fail = false;
    let observed = false;
    const saves: boolean[] = [];
    const call = client.invoke({
      ...echo,
      method: "count",
      methodParameters: noParams,
      onCheckpoint: () => {
        if (!fail) return;
        saves.push(observed);
        return Promise.reject(new Error("read-only file system"));
      },
    });
    const { server, start } = await nextStart(transport);
    server.send(acceptanceOf(start));
    server.send({ type: "invocationResult", mappings: [outputMapping(2)], result: streamResult() });
    server.send(okEnd(0));
    server.send({ type: "invocationFinished", outcome: { kind: "success" } });
    await call.finished;
    fail = true;
    const result = await call.result;
    const iterator = result.kind === "value" ? result.streams[0]![Symbol.asyncIterator]() : undefined;
    // Protocol 6.5: the terminal cursor is retained only after the consumer observed the end.
    expect(await iterator!.next()).toEqual({ done: true, value: undefined });
    observed = true;
    await expect(iterator!.next()).rejects.toMatchObject({ kind: "checkpoint-failed", cause: new Error("read-only file system") });
    expect(saves).toEqual([true]);
  });
});

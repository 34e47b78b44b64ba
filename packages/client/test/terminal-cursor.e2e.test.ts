/**
 * Protocol 6.5: "The client retains [the terminal cursor] only after the
 * language-level consumer observes completion, error, or cancellation", and
 * section 13: "A crash can replay but cannot skip output". A state holding the
 * terminal cursor that was saved before the consumer saw the end let a process
 * killed in between resume to nothing, its error end never reported. Over real
 * WebSockets on loopback, against a scripted server.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { OutputOutcome } from "@golem-stream/wire";
import { createClient, type ResumeState } from "../src/index.js";
import { acceptanceOf, cursor, echo, noParams, outputMapping, streamResult, u32Item } from "./support/fixtures.js";
import { startFakeServer, type FakeServer } from "./support/fake-session-server.js";

let server: FakeServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const END = cursor("o", "end");

/** A `count`-like call whose stream has one item and then ends with `outcome`; the server finishes only if `finish`. */
async function oneItemThen(outcome: OutputOutcome, finish: boolean) {
  server = await startFakeServer(async (peer) => {
    const start = await peer.next();
    if (start.type !== "invocationStart") throw new Error(`expected a start, got ${start.type}`);
    peer.send(acceptanceOf(start, [], { sessionToken: "s" }));
    peer.send({ type: "invocationResult", mappings: [outputMapping(2)], result: streamResult() });
    peer.send(u32Item(0));
    peer.send({ type: "outputStreamEnd", channel: 2, cursorToken: END, outcome, sequence: 1n });
    if (finish) peer.send({ type: "invocationFinished", outcome: { kind: "success" } });
  });
  const order: string[] = [];
  let endSaved!: () => void;
  const saved = new Promise<void>((resolve) => (endSaved = resolve));
  let failTheEnd = false;
  const call = createClient({ url: server.url, token: "t", reconnect: { maxAttempts: 0 } }).invoke({
    ...echo,
    method: "count",
    methodParameters: noParams,
    onCheckpoint: (state: ResumeState) => {
      if (!state.outputCursors.includes(END)) return;
      order.push("terminal cursor handed to onCheckpoint");
      endSaved();
      if (failTheEnd) return Promise.reject(new Error("disk full"));
    },
  });
  call.finished.catch(() => undefined);
  return { call, order, saved, failSavingTheEnd: () => (failTheEnd = true) };
}

describe("the terminal cursor is retained only after the consumer observed the end (protocol 6.5)", () => {
  it("an error end: the consumer has the stream's error before the state with the terminal cursor is saved", async () => {
    const { call, order, saved } = await oneItemThen({ kind: "error", code: "producer-error", message: "producer failed" }, true);
    const result = await call.result;
    const items: unknown[] = [];
    try {
      for await (const item of result.kind === "value" ? result.streams[0]!.values() : []) items.push(item);
    } catch (error) {
      order.push(`consumer observed ${(error as { kind: string }).kind}`);
    }
    await saved;
    expect(items).toEqual([{ kind: "u32", value: 0 }]);
    expect(order).toEqual(["consumer observed stream-failed", "terminal cursor handed to onCheckpoint"]);
    await expect(call.finished).resolves.toEqual({ kind: "success" });
  });

  it("a normal end: the consumer has done before the state with the terminal cursor is saved", async () => {
    const { call, order, saved } = await oneItemThen({ kind: "ok" }, true);
    const result = await call.result;
    for await (const item of result.kind === "value" ? result.streams[0]!.values() : []) expect(item).toEqual({ kind: "u32", value: 0 });
    order.push("consumer observed done");
    await saved;
    expect(order).toEqual(["consumer observed done", "terminal cursor handed to onCheckpoint"]);
  });

  it("a save of the terminal cursor that fails after the consumer saw the end still fails the handle (checkpoint-failed)", async () => {
    const { call, order, saved, failSavingTheEnd } = await oneItemThen({ kind: "ok" }, false);
    failSavingTheEnd();
    const result = await call.result;
    for await (const item of result.kind === "value" ? result.streams[0]!.values() : []) expect(item).toEqual({ kind: "u32", value: 0 });
    order.push("consumer observed done");
    await saved;
    await expect(call.finished).rejects.toMatchObject({ kind: "checkpoint-failed", cause: new Error("disk full") });
    expect(order).toEqual(["consumer observed done", "terminal cursor handed to onCheckpoint"]);
    // Nothing was cancelled on the server: the last saved state can still take the invocation over.
    expect(server!.peers[0]!.received.map((message) => message.type)).toEqual(["invocationStart"]);
  });
});

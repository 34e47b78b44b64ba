/**
 * The client against scripted servers on loopback (real `ws`, real wire
 * codecs) that misbehave in ways the real server never does: one
 * that accepts and then rejects retryably, one that never answers, one that
 * finishes before its streams end, one that uses channels it never announced.
 *
 * Nothing here measures elapsed time: the reconnect policy's random source is
 * injected, so every delay is known, and the only clock read by the client
 * (`performance.now()`, for `stableAfterMs`) is faked where it matters.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ClientMessage, InvocationStart, ResumeAttach, ServerMessage } from "@golem-stream/wire";
import { ClientError, createClient, inputStream, type ClientOptions, type ReconnectingEvent } from "../src/index.js";
import {
  SESSION,
  cursor,
  echo,
  inputMapping,
  noParams,
  okEnd,
  outputMapping,
  provisionalRefOf,
  streamResult,
  u32Item,
} from "./support/fixtures.js";
import { startFakeServer, type FakePeer, type FakeServer } from "./support/fake-session-server.js";

let server: FakeServer | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await server?.close();
  server = undefined;
});

type Attach = InvocationStart | ResumeAttach;
function isAttach(message: ClientMessage): message is Attach {
  return message.type === "invocationStart" || message.type === "resumeAttach";
}

async function nextAttach(peer: FakePeer): Promise<Attach> {
  const message = await peer.next();
  if (!isAttach(message)) throw new Error(`expected an attach, got ${message.type}`);
  return message;
}

const idempotencyKeyOf = (attach: Attach): string => (attach.type === "invocationStart" ? attach.idempotencyKey : "key-from-server");

function accept(peer: FakePeer, attach: Attach, mappings: Extract<ServerMessage, { type: "invocationAccepted" }>["mappings"] = []): void {
  peer.send({
    type: "invocationAccepted",
    attemptId: attach.attemptId,
    idempotencyKey: idempotencyKeyOf(attach),
    mappings,
    sessionToken: SESSION,
  });
}

/** Protocol 6.2 after acceptance: the diagnostic, then close 1002. */
function rejectRetryably(peer: FakePeer, attach: Attach): void {
  peer.send({ type: "invocationRejected", attemptId: attach.attemptId, code: "internal-error", message: "try again", retryable: true });
  peer.close(1002);
}

function client(url: string, options: Partial<ClientOptions> = {}) {
  return createClient({ url, token: "t", ...options });
}

function record(call: { on(event: "reconnecting", listener: (event: ReconnectingEvent) => void): () => void }): ReconnectingEvent[] {
  const events: ReconnectingEvent[] = [];
  call.on("reconnecting", (event) => events.push(event));
  return events;
}

describe("a server that accepts and then rejects retryably (retry storm)", () => {
  it("is given a bounded number of attaches, with a backoff that keeps growing across acceptances up to its cap, then connection-lost", async () => {
    // Without a bound the client would attach forever: past this many attaches the fake ends the
    // test with a definitive rejection, which the assertions below then reject.
    const ENOUGH = 40;
    server = await startFakeServer(async (peer) => {
      const attach = await nextAttach(peer);
      if (peer.index > ENOUGH) {
        peer.send({ type: "invocationRejected", attemptId: attach.attemptId, code: "forbidden", message: "enough", retryable: false });
        return;
      }
      accept(peer, attach);
      rejectRetryably(peer, attach);
    });
    // random just below 1: every delay is its ceiling minus one, so the backoff is exactly known.
    const call = client(server.url, {
      reconnect: { maxAttempts: 6, initialDelayMs: 1, multiplier: 2, maxDelayMs: 8, random: () => 0.999999 },
    }).invoke({
      ...echo,
      method: "count",
      methodParameters: noParams,
    });
    const operations: string[] = [];
    call.on("accepted", (event) => operations.push(event.operation));
    const reconnects = record(call);

    const error = await call.finished.then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(ClientError);
    expect(error).toMatchObject({ kind: "connection-lost", code: undefined, message: expect.stringContaining("without progress") });
    // The cause is the last rejection, with its public code.
    expect((error as ClientError).cause).toMatchObject({ code: "internal-error", retryable: true });
    // One start and maxAttempts resumes, every one of them accepted: acceptance is not progress.
    expect(server.peers).toHaveLength(7);
    expect(operations).toEqual(["start", "resume", "resume", "resume", "resume", "resume", "resume"]);
    expect(reconnects.map((event) => event.failures)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(reconnects.every((event) => event.maxAttempts === 6 && event.cause === "internal-error")).toBe(true);
    // Ceilings 1, 2, 4, 8, then capped at maxDelayMs 8.
    expect(reconnects.map((event) => event.delayMs)).toEqual([0, 1, 3, 7, 7, 7]);
  });

  it("starts the budget over whenever a new output item arrives, however often the server fails", async () => {
    const CONNECTIONS = 12; // four times maxAttempts
    server = await startFakeServer(async (peer) => {
      const attach = await nextAttach(peer);
      const item = peer.index - 1; // one new item per connection
      if (attach.type === "invocationStart") {
        accept(peer, attach);
        peer.send({ type: "invocationResult", mappings: [outputMapping(2)], result: streamResult() });
      } else {
        accept(peer, attach, [outputMapping(2)]);
      }
      peer.send(u32Item(item));
      if (peer.index < CONNECTIONS) return rejectRetryably(peer, attach);
      peer.send({
        type: "outputStreamEnd",
        channel: 2,
        cursorToken: cursor("o", "end"),
        outcome: { kind: "ok" },
        sequence: BigInt(item + 1),
      });
      if (attach.type === "resumeAttach") peer.send({ type: "invocationResult", mappings: [], result: streamResult() });
      peer.send({ type: "invocationFinished", outcome: { kind: "success" } });
    });
    const call = client(server.url, { reconnect: { maxAttempts: 3, random: () => 0 } }).invoke({
      ...echo,
      method: "count",
      methodParameters: noParams,
    });
    const reconnects = record(call);
    const result = await call.result;
    const items: unknown[] = [];
    for await (const item of result.kind === "value" ? result.streams[0]! : []) items.push(item);
    await call.finished;
    expect(items).toEqual(Array.from({ length: CONNECTIONS }, (_, value) => ({ kind: "u32", value })));
    expect(reconnects.map((event) => event.failures)).toEqual(Array(CONNECTIONS - 1).fill(1));
  });

  it("starts the budget over whenever the server acknowledges more input", async () => {
    const ITEMS = 20;
    const CONNECTIONS = 10;
    let ref: string | undefined;
    server = await startFakeServer(async (peer) => {
      const attach = await nextAttach(peer);
      // The durable high-water stays at 0 for three connections, then grows by one item per connection.
      const acked = BigInt(Math.max(0, peer.index - 3));
      if (attach.type === "invocationStart") {
        ref = provisionalRefOf(attach);
        accept(peer, attach, [inputMapping(1, ref, acked)]);
      } else {
        accept(peer, attach, [inputMapping(1, undefined, acked)]);
      }
      // Everything not yet acknowledged is resent: wait for it, so an acknowledgement never
      // exceeds what was sent.
      while (peer.received.filter((m) => m.type === "inputStreamEnd").length === 0) await peer.next();
      if (peer.index < CONNECTIONS) return rejectRetryably(peer, attach);
      peer.send({ type: "inputStreamAck", channel: 1, highestContiguousSequence: BigInt(ITEMS), mappings: [], terminal: true });
      peer.send({ type: "invocationResult", mappings: [], result: { kind: "none" } });
      peer.send({ type: "invocationFinished", outcome: { kind: "success" } });
    });
    const strings = Array.from({ length: ITEMS }, (_, i) => `item-${i}`);
    const call = client(server.url, { reconnect: { maxAttempts: 3, random: () => 0 } }).invoke({
      ...echo,
      method: "reverse",
      methodParameters: { kind: "record", value: { fields: [inputStream.strings(strings)] } },
    });
    const reconnects = record(call);
    await call.finished;
    expect(server.peers).toHaveLength(CONNECTIONS);
    // Three connections without progress use up the budget of 3; from the fourth on, every
    // acceptance raised the high-water (without that counting, the fourth would be the end).
    expect(reconnects.map((event) => event.failures)).toEqual([1, 2, 3, ...Array(CONNECTIONS - 4).fill(1)]);
  });

  it("counts an accepted connection that stayed up for stableAfterMs as progress", async () => {
    vi.useFakeTimers({ toFake: ["performance"] });
    const STABLE_MS = 60_000;
    const CONNECTIONS = 6;
    const acceptedSeen: (() => void)[] = [];
    server = await startFakeServer(async (peer) => {
      const attach = await nextAttach(peer);
      const seen = new Promise<void>((resolve) => acceptedSeen.push(resolve));
      accept(peer, attach);
      if (peer.index === CONNECTIONS) {
        peer.send({ type: "invocationResult", mappings: [], result: { kind: "none" } });
        peer.send({ type: "invocationFinished", outcome: { kind: "success" } });
        return;
      }
      await seen;
      // Connections 1-3 stay up (by the client's clock) for stableAfterMs; 4 and 5 fail at once.
      if (peer.index <= 3) vi.advanceTimersByTime(STABLE_MS);
      rejectRetryably(peer, attach);
    });
    const call = client(server.url, { reconnect: { maxAttempts: 5, stableAfterMs: STABLE_MS, random: () => 0 } }).invoke({
      ...echo,
      method: "count",
      methodParameters: noParams,
    });
    call.on("accepted", () => acceptedSeen.shift()?.());
    const reconnects = record(call);
    await call.finished;
    expect(reconnects.map((event) => event.failures)).toEqual([1, 1, 1, 2, 3]);
  });
});

describe("a server that completes the handshake and never answers (acceptance timeout)", () => {
  it("drops the connection after acceptanceTimeoutMs and retries the exact descriptor with the same attempt id", async () => {
    server = await startFakeServer(async (peer) => {
      const attach = await nextAttach(peer);
      if (peer.index === 1) return; // silence (pings are still answered by ws)
      accept(peer, attach);
      peer.send({ type: "invocationResult", mappings: [], result: { kind: "none" } });
      peer.send({ type: "invocationFinished", outcome: { kind: "success" } });
    });
    const TIMEOUT_MS = 100;
    const call = client(server.url, { acceptanceTimeoutMs: TIMEOUT_MS, reconnect: { random: () => 0 } }).invoke({
      ...echo,
      method: "count",
      methodParameters: noParams,
    });
    const reconnects = record(call);
    await call.finished;
    const [first, ...retries] = server.peers;
    // On a loaded machine an answered retry may also miss the short timeout; it is then retried
    // exactly too, so only "at least one" retry is certain.
    expect(retries.length).toBeGreaterThanOrEqual(1);
    for (const retry of retries) {
      // The exact attempt: same attempt id, same descriptor (protocol 9).
      expect(retry.received[0]).toEqual(first!.received[0]);
      expect((retry.received[0] as InvocationStart).attemptId).toBe((first!.received[0] as InvocationStart).attemptId);
    }
    await expect(call.accepted).resolves.toMatchObject({ operation: "start", replayed: true });
    expect(reconnects[0]).toEqual({
      failures: 1,
      maxAttempts: 10,
      delayMs: 0,
      cause: `no answer to invocationStart within ${TIMEOUT_MS} ms`,
    });
    expect(reconnects).toHaveLength(retries.length);
    await first!.closed; // the silent connection was let go
  });

  it("applies to a resume as well, and counts against the attempt budget", async () => {
    server = await startFakeServer(async (peer) => {
      const attach = await nextAttach(peer);
      if (attach.type === "invocationStart") {
        accept(peer, attach);
        return peer.close(1001); // a loss after acceptance: the client resumes
      }
      // Every resume goes unanswered.
    });
    const call = client(server.url, { acceptanceTimeoutMs: 200, reconnect: { maxAttempts: 3, random: () => 0 } }).invoke({
      ...echo,
      method: "count",
      methodParameters: noParams,
    });
    await expect(call.finished).rejects.toMatchObject({
      kind: "connection-lost",
      message: expect.stringContaining("no answer to resumeAttach"),
    });
    // maxAttempts 3: the loss after acceptance (no progress) and the silent resumes use it up.
    expect(server.peers).toHaveLength(4);
    const resumes = server.peers
      .map((peer) => peer.received[0]!)
      .filter((message): message is ResumeAttach => message.type === "resumeAttach");
    expect(resumes.length).toBeGreaterThanOrEqual(2);
    // One resume operation, retried exactly.
    for (const resume of resumes) expect(resume).toEqual(resumes[0]);
  });

  it("refuses an unusable timeout before any I/O", () => {
    for (const acceptanceTimeoutMs of [-1, 1.5, Number.NaN, 2 ** 31]) {
      expect(() => createClient({ url: "ws://127.0.0.1:1", token: "t", acceptanceTimeoutMs })).toThrow(
        expect.objectContaining({ kind: "invalid-argument" }),
      );
    }
  });
});

describe("a server that finishes too early (decisions §8)", () => {
  async function finishEarly(script: (peer: FakePeer, attach: Attach) => void) {
    server = await startFakeServer(async (peer) => script(peer, await nextAttach(peer)));
    return client(server.url, { reconnect: { maxAttempts: 0 } }).invoke({ ...echo, method: "count", methodParameters: noParams });
  }

  it("fails the whole invocation when invocationFinished comes before an output stream's terminal", async () => {
    const call = await finishEarly((peer, attach) => {
      accept(peer, attach);
      peer.send({ type: "invocationResult", mappings: [outputMapping(2)], result: streamResult() });
      peer.send(u32Item(0));
      peer.send({ type: "invocationFinished", outcome: { kind: "success" } });
    });
    const violation = {
      kind: "server-violation",
      code: "protocol-error",
      message: expect.stringContaining("before the terminal of 1 output stream"),
    };
    await expect(call.finished).rejects.toMatchObject(violation);
    expect(call.signal.aborted).toBe(true);
    // The reader gets what arrived, then the same violation.
    const result = await call.result;
    const iterator = (result.kind === "value" ? result.streams[0]! : undefined)![Symbol.asyncIterator]();
    await expect(iterator.next()).resolves.toEqual({ done: false, value: { kind: "u32", value: 0 } });
    await expect(iterator.next()).rejects.toMatchObject(violation);
  });

  it("also when the outcome is a failure: the server owed every terminal first (protocol 6.9)", async () => {
    const call = await finishEarly((peer, attach) => {
      accept(peer, attach);
      peer.send({ type: "invocationResult", mappings: [outputMapping(2)], result: streamResult() });
      peer.send({ type: "invocationFinished", outcome: { kind: "failure", code: "invocation-failed", message: "boom" } });
    });
    await expect(call.finished).rejects.toMatchObject({ kind: "server-violation", code: "protocol-error" });
  });

  it("fails the whole invocation when a success comes without a result", async () => {
    const call = await finishEarly((peer, attach) => {
      accept(peer, attach);
      peer.send({ type: "invocationFinished", outcome: { kind: "success" } });
    });
    await expect(call.finished).rejects.toMatchObject({
      kind: "server-violation",
      code: "protocol-error",
      message: expect.stringContaining("without an invocationResult"),
    });
    await expect(call.result).rejects.toMatchObject({ kind: "server-violation" });
  });

  it("succeeds when every terminal came first (the violation check does not misfire)", async () => {
    const call = await finishEarly((peer, attach) => {
      accept(peer, attach);
      peer.send({ type: "invocationResult", mappings: [outputMapping(2)], result: streamResult() });
      peer.send(okEnd(0));
      peer.send({ type: "invocationFinished", outcome: { kind: "success" } });
    });
    await expect(call.finished).resolves.toEqual({ kind: "success" });
  });
});

describe("channels the server never announced (protocol 8: invalid-channel)", () => {
  const item = (channel: number): ServerMessage => ({
    type: "outputStreamItem",
    channel,
    cursorToken: cursor("o", 0),
    mappings: [],
    sequence: 0n,
    value: { kind: "u32", value: 0 },
  });
  const cases: [string, ServerMessage[]][] = [
    ["an item on a channel never mapped", [item(9)]],
    [
      "a binary item on a channel never mapped",
      [{ type: "output-u8", channel: 9, cursorToken: cursor("o", 0), sequence: 0n, payload: Uint8Array.of(1) }],
    ],
    ["a terminal on a channel never mapped", [okEnd(0, 9)]],
    ["a streamCancel on a channel never mapped", [{ type: "streamCancel", channel: 9, reason: "consumer-drop" }]],
    [
      "an input acknowledgement on an output channel",
      [
        { type: "invocationResult", mappings: [outputMapping(2)], result: streamResult() },
        { type: "inputStreamAck", channel: 2, highestContiguousSequence: 0n, mappings: [], terminal: false },
      ],
    ],
    [
      "a channel mapped twice",
      [
        { type: "invocationResult", mappings: [outputMapping(2)], result: streamResult() },
        { ...item(2), mappings: [outputMapping(2, "another-stream")] } as ServerMessage,
      ],
    ],
  ];
  it.each(cases)("%s", async (_name, messages) => {
    server = await startFakeServer(async (peer) => {
      const attach = await nextAttach(peer);
      accept(peer, attach);
      for (const message of messages) peer.send(message);
    });
    const call = client(server.url, { reconnect: { maxAttempts: 3, random: () => 0 } }).invoke({
      ...echo,
      method: "count",
      methodParameters: noParams,
    });
    await expect(call.finished).rejects.toMatchObject({ kind: "server-violation", code: "invalid-channel" });
    expect(server.peers).toHaveLength(1); // a violation is not retried
  });
});

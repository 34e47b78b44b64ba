/**
 * The protocol state machine without sockets: `Connection` and
 * `SessionRuntime` driven through an in-memory `SessionTransport` over the
 * in-memory store. The same
 * rules the loopback tests check, with full control of interleavings.
 */
import { describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { canonicalJson, type JsonValue } from "@golem-stream/wire";
import { SENT, type OutgoingMessage } from "../src/transport/transport.js";
import type { ServerLimits } from "../src/index.js";
import { NOOP_OBSERVER, type ServerObserver } from "../src/observability/server-observer.js";
import { demoStart, v, resumeAttach } from "./helpers.js";
import { MemoryTransport, memoryHarness, nextTurn } from "./support/memory-session.js";

/** A transport under backpressure for output items: each one's send settles only when the test releases it. */
class GatedTransport extends MemoryTransport {
  readonly #gates: (() => void)[] = [];
  override send(message: OutgoingMessage): Promise<void> {
    void super.send(message);
    if (message.type !== "outputStreamItem") return SENT;
    return new Promise((resolve) => this.#gates.push(resolve));
  }
  get gated(): number {
    return this.#gates.length;
  }
  release(): void {
    this.#gates.shift()?.();
  }
}

const harness = (limits: Partial<ServerLimits> = {}, observer?: ServerObserver) =>
  memoryHarness({ limits, ...(observer === undefined ? {} : { observer }) });

/**
 * Counts what the runtime reports, and wakes `until` on every report: tests
 * wait on what the server did, not on a clock.
 */
class CountingObserver {
  readonly counts = { inputAccepted: 0, outputRecorded: 0, sessionBudget: 0, outputWindow: 0, sessionsFinished: 0 };
  /** The last of input accepted / session budget spent: which came last says whether input is waiting. */
  last: "inputAccepted" | "sessionBudget" | undefined;
  #waiters: (() => void)[] = [];
  readonly observer: ServerObserver = {
    ...NOOP_OBSERVER,
    inputAccepted: (_kind, items) => this.#saw("inputAccepted", items),
    outputRecorded: (_kind, items) => this.#saw("outputRecorded", items),
    sessionFinished: () => this.#saw("sessionsFinished", 1),
    backpressure: (reason) => {
      if (reason === "session-budget") this.#saw("sessionBudget", 1);
      if (reason === "output-window") this.#saw("outputWindow", 1);
    },
  };
  #saw(what: keyof CountingObserver["counts"], n: number): void {
    this.counts[what] += n;
    if (what === "inputAccepted" || what === "sessionBudget") this.last = what;
    for (const wake of this.#waiters.splice(0)) wake();
  }
  /** Waits until `predicate` holds, re-checked on every report and whenever `transport` sends. */
  async until(transport: MemoryTransport, predicate: () => boolean): Promise<void> {
    while (!predicate()) {
      const seen = transport.sent.length;
      await Promise.race([new Promise<void>((resolve) => this.#waiters.push(resolve)), transport.until((sent) => sent.length > seen)]);
    }
  }
}

/** A client that stopped reading once the invocation finished: the send of `invocationFinished` never drains. */
class StalledAtFinishTransport extends MemoryTransport {
  override send(message: OutgoingMessage): Promise<void> {
    void super.send(message);
    return message.type === "invocationFinished" ? new Promise<void>(() => undefined) : SENT;
  }
}

describe("Connection + SessionRuntime in memory", () => {
  it("closes after invocationFinished although its send never drains (a client that stopped reading does not hold the socket)", async () => {
    const { open, store } = harness();
    const { transport, send } = open(new StalledAtFinishTransport());
    send(demoStart("count", v.record(v.u32(2), v.u32(0))));
    // Closed at all is the point: a close that waited for the send to drain would never come.
    expect(await transport.expectClose("after invocationFinished")).toBe(1000);
    expect(transport.sent.at(-1)?.type).toBe("invocationFinished");
    await store.close();
  });

  it("runs reverse end to end and closes with 1000 after invocationFinished", async () => {
    const { open, store } = harness();
    const { transport, send } = open();
    send(demoStart("reverse", v.record(v.stream(randomUUID()))));
    await transport.until((sent) => sent.length > 0);
    const accepted = transport.sent[0];
    if (accepted?.type !== "invocationAccepted") throw new Error("not accepted");
    const channel = accepted.mappings[0]!.channel;
    send({ type: "inputStreamItem", channel, sequence: 0n, value: v.str("xy") });
    send({ type: "inputStreamEnd", channel, sequence: 1n });
    await transport.until(() => transport.closedWith !== undefined);
    expect(transport.closedWith).toBe(1000);
    const items = transport.sent.filter((m) => m.type === "outputStreamItem");
    expect(items.map((m) => m.value)).toEqual([v.str("yx")]);
    // The value went out as the canonical bytes the store recorded, not parsed and encoded again.
    expect(transport.storedValues.map((bytes) => new TextDecoder().decode(bytes))).toEqual([
      canonicalJson(v.str("yx") as unknown as JsonValue),
    ]);
    expect(transport.sent.at(-1)?.type).toBe("invocationFinished");
    await store.close();
  });

  it("a transport that closes mid-invocation only detaches; a second transport takes the session over", async () => {
    const { open, store } = harness();
    const first = open();
    first.send(demoStart("count", v.record(v.u32(50), v.u32(1))));
    await first.transport.until((sent) => sent.some((m) => m.type === "outputStreamItem"));
    const accepted = first.transport.sent[0];
    if (accepted?.type !== "invocationAccepted") throw new Error("not accepted");
    first.connection.transportClosed();

    const second = open();
    second.send(resumeAttach("resume", accepted.sessionToken));
    await second.transport.until(() => second.transport.closedWith !== undefined);
    const items = second.transport.sent.filter((m) => m.type === "outputStreamItem");
    expect(items).toHaveLength(50);
    expect(second.transport.sent.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    await store.close();
  });

  it("an exact replay whose transport closed while it was decided (a retry its client gave up on) does not revoke the live transport of the same attempt", async () => {
    const { open, store } = harness();
    const start = demoStart("count", v.record(v.u32(30), v.u32(1)));
    const live = open();
    live.send(start);
    await live.transport.until((sent) => sent.some((m) => m.type === "outputStreamItem"));
    // The same attempt arrives late on a connection its client has already closed.
    const stale = open();
    stale.send(start);
    stale.cut();
    await live.transport.until(() => live.transport.closedWith !== undefined);
    expect(live.transport.sent.map((m) => m.type)).not.toContain("attachmentRevoked");
    expect(live.transport.sent.filter((m) => m.type === "outputStreamItem")).toHaveLength(30);
    expect(live.transport.sent.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    await store.close();
  });

  it("an output pump sends its next item only when the transport has settled the previous send", async () => {
    const counting = new CountingObserver();
    const { open, store } = harness({}, counting.observer);
    const { transport, send } = open(new GatedTransport());
    send(demoStart("count", v.record(v.u32(4), v.u32(0))));
    const items = () => transport.sent.filter((m) => m.type === "outputStreamItem").length;
    // The agent recorded all four items and its finish was committed: every item was there to send.
    await counting.until(transport, () => counting.counts.outputRecorded === 4 && counting.counts.sessionsFinished === 1);
    for (let sent = 1; sent <= 4; sent++) {
      // The pump waits on the one the transport holds.
      expect(items()).toBe(sent);
      expect(transport.gated).toBe(1);
      transport.release();
      if (sent < 4) await transport.until(() => items() > sent);
    }
    await transport.until(() => transport.closedWith !== undefined);
    expect(transport.sent.filter((m) => m.type === "outputStreamItem").map((m) => m.sequence)).toEqual([0n, 1n, 2n, 3n]);
    expect(transport.sent.at(-1)?.type).toBe("invocationFinished");
    await store.close();
  });

  it("an attachment that has sent invocationFinished is not revoked after it (nothing follows it)", async () => {
    const { open, store } = harness();
    const first = open();
    first.send(demoStart("reverse", v.record(v.stream(randomUUID()))));
    await first.transport.until((sent) => sent.some((m) => m.type === "invocationAccepted"));
    const accepted = first.transport.sent[0];
    if (accepted?.type !== "invocationAccepted") throw new Error("not accepted");
    first.send({ type: "inputStreamItem", channel: 1, sequence: 0n, value: v.str("ab") });
    first.send({ type: "inputStreamEnd", channel: 1, sequence: 1n });
    await first.transport.until(() => first.transport.closedWith !== undefined);

    // One resume of the finished session on two transports at once (an uncertain retry): the first
    // attachment sends its invocationFinished while the second, its exact replay, replaces it.
    const item = first.transport.sent.find((m) => m.type === "outputStreamItem");
    if (item?.type !== "outputStreamItem") throw new Error("no output");
    const resume = resumeAttach("resume", accepted.sessionToken, [item.cursorToken]);
    const twins = [open(), open()];
    for (const twin of twins) twin.send(resume);
    for (const twin of twins) await twin.transport.expectClose("the end of an attachment of a finished session");
    for (const twin of twins) {
      const sent = twin.transport.sent;
      const finished = sent.findIndex((m) => m.type === "invocationFinished");
      // Either it finished (and nothing followed) or it was replaced before finishing.
      if (finished >= 0) expect(sent.slice(finished + 1)).toEqual([]);
      else expect(sent.at(-1)).toEqual({ type: "attachmentRevoked", reason: "replaced" });
    }
    await store.close();
  });

  it("pauses reading when messages pile up behind a slow step", async () => {
    const { open, store } = harness();
    const { transport, send } = open();
    send(demoStart("reverse", v.record(v.stream(randomUUID()))));
    // Nothing may be sent before the acceptance (section 1); right after it, a synchronous burst queues and reading pauses.
    await transport.until((sent) => sent.some((m) => m.type === "invocationAccepted"));
    for (let i = 0; i < 20; i++) send({ type: "inputStreamItem", channel: 1, sequence: BigInt(i), value: v.str(`${i}`) });
    expect(transport.paused).toBe(true);
    send({ type: "inputStreamEnd", channel: 1, sequence: 20n });
    await transport.until(() => transport.closedWith !== undefined);
    expect(transport.paused).toBe(false);
    expect(transport.sent.filter((m) => m.type === "outputStreamItem")).toHaveLength(20);
    await store.close();
  });

  it("reads at most maxReadBytesPerTurn of messages in one turn of the event loop, then reads on at the next", async () => {
    const { open, store } = harness({ maxReadBytesPerTurn: 512 });
    const { transport, send } = open();
    send(demoStart("tally", v.record(v.stream(randomUUID()))));
    await transport.until((sent) => sent.some((m) => m.type === "invocationAccepted"));
    await nextTurn(); // the start's turn is over
    const item = (i: number) => ({ type: "inputStreamItem", channel: 1, sequence: BigInt(i), value: v.str("x".repeat(100)) }) as const;
    // About 170 bytes each: the third crosses 512 bytes.
    send(item(0));
    send(item(1));
    expect(transport.paused).toBe(false);
    send(item(2));
    expect(transport.paused).toBe(true);
    await nextTurn();
    expect(transport.paused).toBe(false);
    // A new turn counts afresh, and nothing read before the pause was lost.
    send(item(3));
    send(item(4));
    expect(transport.paused).toBe(false);
    send({ type: "inputStreamEnd", channel: 1, sequence: 5n });
    await transport.until(() => transport.closedWith !== undefined);
    // tally's result: 5 items of 100 bytes.
    const result = transport.sent.find((m) => m.type === "invocationResult");
    expect(JSON.stringify(result, (_k, value: unknown) => (typeof value === "bigint" ? String(value) : value))).toContain(
      '{"kind":"u64","value":"5"},{"kind":"u64","value":"500"}',
    );
    expect(transport.sent.filter((m) => m.type === "inputStreamAck").at(-1)).toMatchObject({
      highestContiguousSequence: 5n,
      terminal: true,
    });
    await store.close();
  });

  it("a turn's end does not resume reading that backpressure stopped", async () => {
    const { open, store } = harness({ maxReadBytesPerTurn: 1, maxPendingInboundMessages: 2, maxQueuedEntriesPerStream: 2 });
    const { transport, send } = open();
    send(demoStart("reverse", v.record(v.stream(randomUUID()))));
    await transport.until((sent) => sent.some((m) => m.type === "invocationAccepted"));
    // reverse's output waits for a send that never settles: its input piles up behind it.
    transport.holdSends();
    for (let i = 0; i < 50; i++) send({ type: "inputStreamItem", channel: 1, sequence: BigInt(i), value: v.str(`${i}`) });
    expect(transport.paused).toBe(true);
    await nextTurn();
    expect(transport.paused).toBe(true);
    transport.releaseSends();
    await store.close();
  });

  it("a streamCancel goes through while unsent output holds the session's whole budget (the input behind it waits)", async () => {
    const counting = new CountingObserver();
    const { open, store } = harness({ maxQueuedBytesPerSession: 64 * 1024 }, counting.observer);
    const first = open(new GatedTransport());
    first.send(demoStart("reverse", v.record(v.stream(randomUUID()))));
    await first.transport.until((sent) => sent.some((m) => m.type === "invocationAccepted"));
    const accepted = first.transport.sent[0];
    if (accepted?.type !== "invocationAccepted") throw new Error("not accepted");
    // No output send ever settles: the agent's output stays unsent and holds the budget. Each
    // item is charged twice its text, about 600 bytes: what is left of the budget once one meets
    // it spent is less than that.
    const items = 400;
    for (let i = 0; i < items; i++) first.send({ type: "inputStreamItem", channel: 1, sequence: BigInt(i), value: v.str("x".repeat(200)) });
    const highWater = (transport: MemoryTransport) =>
      transport.sent.reduce((most, m) => (m.type === "inputStreamAck" ? Math.max(most, Number(m.highestContiguousSequence)) : most), 0);
    // Stuck for good: the last input message met a spent budget (none accepted since), every
    // accepted item is committed (acknowledged), and the agent takes no more (it waits on its
    // output window, or has taken all it got): nothing is left that would give permits back.
    const { counts } = counting;
    await counting.until(
      first.transport,
      () =>
        counting.last === "sessionBudget" &&
        // highestContiguousSequence is a count of items (the protocol's section on acknowledgements).
        highWater(first.transport) === counts.inputAccepted &&
        (counts.outputWindow > 0 || counts.outputRecorded === counts.inputAccepted),
    );
    const before = highWater(first.transport);
    expect(before).toBeLessThan(items);

    // A new connection (the client's way out of a stuck one) cancels before anything else.
    const second = open(new GatedTransport());
    second.send(resumeAttach("resume", accepted.sessionToken));
    await second.transport.until((sent) => sent.some((m) => m.type === "invocationAccepted"));
    expect(first.transport.sent.some((m) => m.type === "attachmentRevoked")).toBe(true);
    const spentBefore = counts.sessionBudget;
    // The cancel as a client may spell it, with whitespace: 512 bytes, the most the server reads
    // as a cancel ahead of the budget. Charged as any text message it would need 1 KiB, more
    // than the spent budget has left and nothing gives any back: it goes through only because a
    // cancel takes no permits, and the terminal ACK below would never come.
    const cancel = `{"type":"streamCancel","channel":1,"reason":"cancelled","version":1}`;
    second.connection.receive(new TextEncoder().encode(cancel.padEnd(512, " ")), false);
    await second.transport.until((sent) => sent.some((m) => m.type === "inputStreamAck" && m.terminal));
    // The cancel itself met the spent budget, and went through.
    expect(counts.sessionBudget).toBe(spentBefore + 1);
    expect(second.transport.sent.find((m) => m.type === "inputStreamAck" && m.terminal)).toMatchObject({
      highestContiguousSequence: BigInt(before),
    });
    await store.close();
  });
});

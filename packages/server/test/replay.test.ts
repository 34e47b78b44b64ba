/**
 * Durable invocations by replay (docs/durable-execution.md), in memory: a
 * server "restart" is `runtime.shutdown()` (nothing more is recorded, as
 * after kill -9) and a second runtime over the same store and keyring,
 * which re-runs what was interrupted (`recoverInterrupted`). The client
 * then resumes as after any reconnect.
 */
import { describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import type { InvocationAccepted, InvocationStart, ResumeAttach, SchemaValueJson, ServerMessage } from "@golem-stream/wire";
import { defineAgentType, t } from "@golem-stream/contract";
import {
  implement,
  MemorySessionStore,
  StaticAgentHost,
  type DrainOutcome,
  type Logger,
  type ServerLimits,
  type SessionStore,
} from "../src/index.js";
import { NOOP_OBSERVER, type ServerObserver } from "../src/observability/server-observer.js";
import { REPLAY_DIVERGED } from "../src/invocation/replay-divergence.js";
import { agentStart, v, resumeAttach } from "./helpers.js";
import { ManualTimers } from "../src/testing/index.js";
import { memoryHarness, type MemoryConnection } from "./support/memory-session.js";

/** What the agents do, per run (`ctx.attempt`): gates the test opens, counts of side effects. */
const hooks = {
  /** Resolves when output item `i` of run `attempt` may be produced; unset: at once. */
  gate: undefined as ((attempt: number, i: number) => Promise<void>) | undefined,
  /** Calls of each step's side effect, by step name. */
  effects: new Map<string, number>(),
  /** Incremented at every run of `unstable`: its output differs on a re-run. */
  unstableRuns: 0,
};

const durable = defineAgentType({
  name: "durable",
  constructor: t.record({}),
  durability: "replay",
  methods: {
    count: { params: t.record({ n: t.u32() }), result: t.stream(t.u32()) },
    sum: { params: t.record({ values: t.stream(t.u32()) }), result: t.u32() },
    sumGroups: { params: t.record({ groups: t.stream(t.record({ name: t.string(), values: t.stream(t.u32()) })) }), result: t.u32() },
    steps: { params: t.record({ n: t.u32() }), result: t.stream(t.string()) },
    unstable: { params: t.record({}), result: t.stream(t.u32()) },
    lucky: { params: t.record({}), result: t.stream(t.string()) },
    fragile: { params: t.record({ n: t.u32() }), result: t.stream(t.u32()), durability: "none" },
    nested: { params: t.record({ groups: t.u32() }), result: t.stream(t.record({ name: t.string(), items: t.stream(t.u32()) })) },
  },
});

async function* counting(attempt: number, n: number): AsyncGenerator<number> {
  for (let i = 0; i < n; i++) {
    await hooks.gate?.(attempt, i);
    yield i;
  }
}

const durableAgent = implement(durable, {
  async count(ctx, { n }) {
    return counting(ctx.attempt, n);
  },
  async sum(_ctx, { values }) {
    let total = 0;
    for await (const value of values) total += value;
    return total;
  },
  async sumGroups(_ctx, { groups }) {
    let total = 0;
    for await (const group of groups) for await (const value of group.values) total += value;
    return total;
  },
  async steps(ctx, { n }) {
    return (async function* () {
      for (let i = 0; i < n; i++) {
        const value = await ctx.step(`effect-${i}`, () => {
          hooks.effects.set(`effect-${i}`, (hooks.effects.get(`effect-${i}`) ?? 0) + 1);
          return { i, squared: i * i };
        });
        await hooks.gate?.(ctx.attempt, i);
        yield `${value.i}:${value.squared}`;
      }
    })();
  },
  async unstable() {
    const run = ++hooks.unstableRuns;
    return (async function* () {
      yield 0;
      yield run;
      await hooks.gate?.(run, 2);
      yield 2;
    })();
  },
  async lucky(ctx) {
    const drawn = await ctx.random();
    const at = await ctx.now();
    return (async function* () {
      yield `${drawn}@${at}`;
      await hooks.gate?.(ctx.attempt, 1);
      yield `attempt ${ctx.attempt}`;
    })();
  },
  async fragile(ctx, { n }) {
    return counting(ctx.attempt, n);
  },
  async nested(ctx, { groups }) {
    return (async function* () {
      for (let g = 0; g < groups; g++) {
        // Gate numbers 100 + g: a group waits before it is yielded.
        await hooks.gate?.(ctx.attempt, 100 + g);
        yield {
          name: `group-${g}`,
          items: (async function* () {
            for (let i = 0; i < 3; i++) yield g * 10 + i;
          })(),
        };
      }
    })();
  },
});

const host = new StaticAgentHost({ t: { default: [durableAgent] } });

function start(method: string, methodParameters: SchemaValueJson): InvocationStart {
  return agentStart("t", "durable", method, methodParameters);
}

/** A gate per run and item: `open(attempt, i)` lets item `i` of run `attempt` through; items not listed in `held` pass at once. */
function gates(held: (attempt: number, i: number) => boolean) {
  const waiting = new Map<string, () => void>();
  const opened = new Set<string>();
  const arrivals = new Map<string, () => void>();
  hooks.gate = (attempt, i) => {
    const key = `${attempt}/${i}`;
    if (!held(attempt, i) || opened.has(key)) return Promise.resolve();
    const release = new Promise<void>((resolve) => waiting.set(key, resolve));
    arrivals.get(key)?.();
    return release;
  };
  return {
    /** Whether run `attempt` waits at item `i`. */
    waiting: (attempt: number, i: number) => waiting.has(`${attempt}/${i}`),
    /** Resolves once run `attempt` waits at item `i`. */
    reached: (attempt: number, i: number): Promise<void> =>
      waiting.has(`${attempt}/${i}`) ? Promise.resolve() : new Promise((resolve) => arrivals.set(`${attempt}/${i}`, resolve)),
    open(attempt: number, i: number) {
      opened.add(`${attempt}/${i}`);
      waiting.get(`${attempt}/${i}`)?.();
    },
  };
}

interface Server {
  readonly store: SessionStore;
  open(): MemoryConnection;
  /** kill -9: nothing more is recorded; the store keeps what it committed. */
  crash(): void;
  /** The server started again on the same store: re-runs what was interrupted. */
  restart(options?: Omit<ServerOptions, "keyring">): Promise<Server>;
  /** What `listen` does at start: re-runs (or fails) the invocations a previous process left running. */
  recover(): Promise<number>;
  /** A drain whose deadline has passed, then the stop: what became of the invocations still running. */
  drain(): Promise<DrainOutcome>;
}

interface ServerOptions {
  readonly timers?: ManualTimers;
  readonly store?: SessionStore;
  readonly keyring?: ReturnType<typeof memoryHarness>["keyring"];
  readonly limits?: Partial<ServerLimits>;
  readonly observer?: ServerObserver;
  readonly logger?: Logger;
}

function server(options: ServerOptions = {}): Server {
  const harness = memoryHarness({
    host,
    store: options.store ?? new MemorySessionStore(),
    ...(options.keyring === undefined ? {} : { keyring: options.keyring }),
    limits: options.limits ?? {},
    observer: options.observer ?? NOOP_OBSERVER,
    ...(options.timers === undefined ? {} : { timers: options.timers }),
    ...(options.logger === undefined ? {} : { logger: options.logger }),
  });
  return {
    store: harness.store,
    open: () => harness.open(),
    crash: () => harness.runtime.shutdown(),
    recover: () => harness.runtime.recoverInterrupted(),
    async drain() {
      const outcome = await harness.runtime.node.finishOwned(0);
      harness.runtime.shutdown();
      return outcome;
    },
    async restart(again: Omit<ServerOptions, "keyring"> = {}) {
      const next = server({ store: harness.store, keyring: harness.keyring, ...again });
      await next.recover();
      return next;
    },
  };
}

/** Output values of the result's stream (the first mapping of `invocationResult`) in a message log. */
function resultItems(messages: readonly ServerMessage[]): SchemaValueJson[] {
  const result = messages.find((m) => m.type === "invocationResult");
  if (result?.type !== "invocationResult") return [];
  const channel = result.mappings[0]?.channel;
  return messages.flatMap((m) => (m.type === "outputStreamItem" && m.channel === channel ? [m.value] : []));
}

/** The cursor token of the last item of the result's stream a client received, if any. */
function lastCursor(messages: readonly ServerMessage[]): string | undefined {
  const items = messages.filter((m) => m.type === "outputStreamItem");
  const last = items.at(-1);
  return last?.type === "outputStreamItem" ? last.cursorToken : undefined;
}

function accepted(messages: readonly ServerMessage[]): InvocationAccepted {
  const found = messages.find((m) => m.type === "invocationAccepted");
  if (found?.type !== "invocationAccepted") throw new Error("not accepted");
  return found;
}

/** Resumes at `node` with the session token and cursor of `before`'s log; resolves to the new log once the invocation finished. */
/** A resume of the session `before` was accepted in, with `outputCursors`. */
function resumeOf(before: readonly ServerMessage[], outputCursors: string[] = []): ResumeAttach {
  return resumeAttach("resume", accepted(before).sessionToken, outputCursors);
}

async function resumeToEnd(node: Server, before: readonly ServerMessage[]): Promise<ServerMessage[]> {
  const { transport, send } = node.open();
  const cursor = lastCursor(before);
  send(resumeOf(before, cursor === undefined ? [] : [cursor]));
  await transport.expect("invocationFinished", (sent) => sent.some((m) => m.type === "invocationFinished"));
  return [...transport.sent];
}

const u32s = (values: readonly SchemaValueJson[]): number[] => values.map((x) => x.value as number);
const strings = (values: readonly SchemaValueJson[]): string[] => values.map((x) => x.value as string);

describe("re-running a replayable invocation after a restart", () => {
  it("count: the re-run compares the items already committed and continues; the client gets each item once and success", async () => {
    const gate = gates((attempt, i) => attempt === 1 && i === 3);
    const first = server();
    const client = first.open();
    client.send(start("count", v.record(v.u32(6))));
    await client.transport.expect("three items", (sent) => resultItems(sent).length === 3);
    expect(gate.waiting(1, 3)).toBe(true);
    first.crash();

    const second = await first.restart();
    const after = await resumeToEnd(second, client.transport.sent);
    expect(u32s(resultItems(client.transport.sent))).toEqual([0, 1, 2]);
    expect(u32s(resultItems(after))).toEqual([3, 4, 5]);
    expect(after.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  });

  it("sum: the re-run reads its input from the log at 0, then what the client sends after the high-water", async () => {
    hooks.gate = undefined;
    const first = server();
    const client = first.open();
    client.send(start("sum", v.record(v.stream(randomUUID()))));
    await client.transport.expect("acceptance", (sent) => sent.some((m) => m.type === "invocationAccepted"));
    const channel = accepted(client.transport.sent).mappings[0]!.channel;
    for (const [sequence, value] of [1, 2, 3].entries())
      client.send({ type: "inputStreamItem", channel, sequence: BigInt(sequence), value: v.u32(value) });
    await client.transport.expect("three acknowledged", (sent) =>
      sent.some((m) => m.type === "inputStreamAck" && m.highestContiguousSequence === 3n),
    );
    first.crash();

    const second = await first.restart();
    const { transport, send } = second.open();
    send(resumeOf(client.transport.sent));
    await transport.expect("acceptance", (sent) => sent.some((m) => m.type === "invocationAccepted"));
    const resumed = accepted(transport.sent).mappings.find((m) => m.direction === "input")!;
    expect(resumed.inputHighWater).toEqual({ sequence: 3n, terminal: false });
    send({ type: "inputStreamItem", channel: resumed.channel, sequence: 3n, value: v.u32(10) });
    send({ type: "inputStreamEnd", channel: resumed.channel, sequence: 4n });
    await transport.expect("invocationFinished", (sent) => sent.some((m) => m.type === "invocationFinished"));
    const result = transport.sent.find((m) => m.type === "invocationResult");
    expect(result?.type === "invocationResult" ? result.result : undefined).toMatchObject({
      kind: "value",
      value: { kind: "u32", value: 16 },
    });
    expect(transport.sent.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  });

  it("sumGroups: a re-run reads a stream an input item introduced (the log keeps the client's provisional reference), and the client continues both", async () => {
    hooks.gate = undefined;
    const first = server();
    const client = first.open();
    client.send(start("sumGroups", v.record(v.stream(randomUUID()))));
    await client.transport.expect("acceptance", (sent) => sent.some((m) => m.type === "invocationAccepted"));
    const groups = accepted(client.transport.sent).mappings[0]!.channel;
    client.send({ type: "inputStreamItem", channel: groups, sequence: 0n, value: v.record(v.str("a"), v.stream(randomUUID())) });
    await client.transport.expect("the group acknowledged, its values' stream mapped", (sent) =>
      sent.some((m) => m.type === "inputStreamAck" && m.channel === groups && m.mappings.length === 1),
    );
    const ack = client.transport.sent.find((m) => m.type === "inputStreamAck" && m.channel === groups);
    const values = ack?.type === "inputStreamAck" ? ack.mappings[0]!.channel : -1;
    for (const [sequence, value] of [1, 2].entries())
      client.send({ type: "inputStreamItem", channel: values, sequence: BigInt(sequence), value: v.u32(value) });
    await client.transport.expect("two values acknowledged", (sent) =>
      sent.some((m) => m.type === "inputStreamAck" && m.channel === values && m.highestContiguousSequence === 2n),
    );
    first.crash();

    const second = await first.restart();
    const { transport, send } = second.open();
    send(resumeOf(client.transport.sent));
    await transport.expect("acceptance", (sent) => sent.some((m) => m.type === "invocationAccepted"));
    const inputs = accepted(transport.sent).mappings.filter((m) => m.direction === "input");
    expect(inputs.map((m) => m.inputHighWater)).toEqual([
      { sequence: 1n, terminal: false },
      { sequence: 2n, terminal: false },
    ]);
    const [groupsAgain, valuesAgain] = inputs.map((m) => m.channel) as [number, number];
    send({ type: "inputStreamItem", channel: valuesAgain, sequence: 2n, value: v.u32(10) });
    send({ type: "inputStreamEnd", channel: valuesAgain, sequence: 3n });
    send({ type: "inputStreamEnd", channel: groupsAgain, sequence: 1n });
    await transport.expect("invocationFinished", (sent) => sent.some((m) => m.type === "invocationFinished"));
    const result = transport.sent.find((m) => m.type === "invocationResult");
    expect(result?.type === "invocationResult" ? result.result : undefined).toMatchObject({
      kind: "value",
      value: { kind: "u32", value: 13 },
    });
    expect(transport.sent.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  });

  it("a method whose output differs on the re-run fails with the documented message, counted by the observer; what was delivered stays", async () => {
    const gate = gates((attempt, i) => attempt === 1 && i === 2);
    hooks.unstableRuns = 0;
    const first = server();
    const client = first.open();
    client.send(start("unstable", v.record()));
    // The run before wrote two items: 0 and its run number (1).
    await client.transport.expect("two items", (sent) => resultItems(sent).length === 2);
    expect(gate.waiting(1, 2)).toBe(true);
    first.crash();

    const diverged: string[] = [];
    const second = await first.restart({ observer: { ...NOOP_OBSERVER, replayDiverged: (session) => diverged.push(session.method) } });
    const after = await resumeToEnd(second, client.transport.sent);
    expect(u32s(resultItems(client.transport.sent))).toEqual([0, 1]);
    expect(after.at(-1)).toEqual({
      type: "invocationFinished",
      outcome: { kind: "failure", code: "invocation-failed", message: REPLAY_DIVERGED },
    });
    expect(diverged).toEqual(["unstable"]);
  });

  it("a method that differs only in journaled values (ctx.random, ctx.now) re-runs to success; ctx.attempt counts the runs", async () => {
    const gate = gates((attempt, i) => attempt === 1 && i === 1);
    const first = server();
    const client = first.open();
    client.send(start("lucky", v.record()));
    await client.transport.expect("the first item", (sent) => resultItems(sent).length === 1);
    expect(gate.waiting(1, 1)).toBe(true);
    first.crash();

    const second = await first.restart();
    const after = await resumeToEnd(second, client.transport.sent);
    expect(after.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    expect(strings(resultItems(after))).toEqual(["attempt 2"]);
  });

  it("a method declared durability none fails on restart as before", async () => {
    const gate = gates((attempt, i) => attempt === 1 && i === 1);
    const first = server();
    const client = first.open();
    client.send(start("fragile", v.record(v.u32(3))));
    await client.transport.expect("the first item", (sent) => resultItems(sent).length === 1);
    expect(gate.waiting(1, 1)).toBe(true);
    first.crash();
    const after = await resumeToEnd(await first.restart(), client.transport.sent);
    expect(after.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "failure", message: "invocation failed" } });
  });

  it("a drain's deadline leaves a replayable invocation still running to its next owner, who runs it to success, and fails one declared durability none", async () => {
    const gate = gates((attempt, i) => attempt === 1 && i === 1);
    const first = server();
    const replayable = first.open();
    replayable.send(start("count", v.record(v.u32(3))));
    const fragile = first.open();
    fragile.send(start("fragile", v.record(v.u32(3))));
    for (const { transport } of [replayable, fragile]) await transport.expect("the first item", (sent) => resultItems(sent).length === 1);
    expect(gate.waiting(1, 1)).toBe(true);

    expect(await first.drain()).toEqual({ failed: 1, handedOver: 1 });
    const running = await first.store.listRunningSessions();
    expect(running.map((session) => session.method)).toEqual(["count"]);

    const second = await first.restart();
    const after = await resumeToEnd(second, replayable.transport.sent);
    expect(u32s(resultItems(after))).toEqual([1, 2]);
    expect(after.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    const failed = await resumeToEnd(second, fragile.transport.sent);
    expect(failed.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "failure", code: "invocation-failed" } });
  });

  it("input committed between losses is progress too: an upload moved on by more losses than maxReplays succeeds", async () => {
    hooks.gate = undefined;
    let node = server({ limits: { maxReplays: 1 } });
    const client = node.open();
    client.send(start("sum", v.record(v.stream(randomUUID()))));
    await client.transport.expect("acceptance", (sent) => sent.some((m) => m.type === "invocationAccepted"));
    const token = accepted(client.transport.sent).sessionToken;
    let total = 0;
    for (let loss = 0; loss < 4; loss++) {
      // One more item committed, then the node is lost.
      const { transport, send } = loss === 0 ? client : node.open();
      if (loss > 0) send(resumeAttach("takeover", token, []));
      await transport.expect("acceptance", (sent) => sent.some((m) => m.type === "invocationAccepted"));
      const mapping = [...transport.sent].reverse().find((m) => m.type === "invocationAccepted");
      const channel = mapping?.type === "invocationAccepted" ? mapping.mappings[0]!.channel : 0;
      send({ type: "inputStreamItem", channel, sequence: BigInt(loss), value: v.u32(loss + 1) });
      total += loss + 1;
      await transport.expect("the item committed", (sent) =>
        sent.some((m) => m.type === "inputStreamAck" && m.highestContiguousSequence === BigInt(loss + 1)),
      );
      node.crash();
      node = await node.restart({ limits: { maxReplays: 1 } });
    }
    const { transport, send } = node.open();
    send(resumeAttach("takeover", token, []));
    await transport.expect("acceptance", (sent) => sent.some((m) => m.type === "invocationAccepted"));
    const mapping = transport.sent.find((m) => m.type === "invocationAccepted");
    const channel = mapping?.type === "invocationAccepted" ? mapping.mappings[0]!.channel : 0;
    send({ type: "inputStreamEnd", channel, sequence: 4n });
    await transport.expect("invocationFinished", (sent) => sent.some((m) => m.type === "invocationFinished"));
    const result = transport.sent.find((m) => m.type === "invocationResult");
    expect(result?.type === "invocationResult" ? result.result : undefined).toMatchObject({ value: { kind: "u32", value: total } });
    expect(transport.sent.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  });

  it("a drain is not a loss without progress: an invocation that commits nothing between drains is handed over more times than limits.maxReplays, and runs on", async () => {
    // Every run but the fifth waits at item 1: after the first run's item 0 nothing more is committed.
    const gate = gates((attempt, i) => i === 1 && attempt < 5);
    const started: number[] = [];
    const options = {
      limits: { maxReplays: 1 },
      observer: { ...NOOP_OBSERVER, replayStarted: (_session: unknown, run: number) => started.push(run) },
    };
    let node = server(options);
    const client = node.open();
    client.send(start("count", v.record(v.u32(3))));
    await client.transport.expect("the first item", (sent) => resultItems(sent).length === 1);
    for (let attempt = 1; attempt < 5; attempt++) {
      await gate.reached(attempt, 1);
      expect(await node.drain()).toEqual({ failed: 0, handedOver: 1 });
      node = await node.restart(options);
    }
    const after = await resumeToEnd(node, client.transport.sent);
    expect(started).toEqual([2, 3, 4, 5]);
    expect(u32s(resultItems(after))).toEqual([1, 2]);
    expect(after.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  });

  it("a hand-over the store does not record within its bound is given up: the drain ends, saying so, and the re-run counts as after a loss", async () => {
    gates((attempt, i) => attempt === 1 && i === 1);
    let asked!: () => void;
    const markAsked = new Promise<void>((resolve) => (asked = resolve));
    const store = new (class extends MemorySessionStore {
      override recordHandOver(): Promise<void> {
        asked();
        return new Promise<void>(() => undefined);
      }
    })();
    const timers = new ManualTimers();
    const warnings: unknown[] = [];
    const logger = {
      info: () => undefined,
      warn: (_message: string, fields?: Record<string, unknown>) => warnings.push(fields?.["event"]),
      error: () => undefined,
    };
    const first = server({ store, timers, logger });
    const client = first.open();
    client.send(start("count", v.record(v.u32(3))));
    await client.transport.expect("the first item", (sent) => resultItems(sent).length === 1);
    const drained = first.drain();
    await markAsked;
    timers.advance(2_000);
    expect(await drained).toEqual({ failed: 0, handedOver: 1 });
    expect(warnings).toEqual(["invocation.hand-over-unrecorded"]);
  });

  it("with limits.maxReplays 0 a drain fails what still runs instead of handing it over: nothing would run it again", async () => {
    gates((attempt, i) => attempt === 1 && i === 1);
    const first = server({ limits: { maxReplays: 0 } });
    const client = first.open();
    client.send(start("count", v.record(v.u32(3))));
    await client.transport.expect("the first item", (sent) => resultItems(sent).length === 1);
    expect(await first.drain()).toEqual({ failed: 1, handedOver: 0 });
  });

  it("re-runs are bounded by limits.maxReplays in a row without progress: a method stuck at the same place fails as by default", async () => {
    gates((_attempt, i) => i === 1);
    let node = server({ limits: { maxReplays: 2 } });
    const client = node.open();
    client.send(start("count", v.record(v.u32(3))));
    await client.transport.expect("the first item", (sent) => resultItems(sent).length === 1);
    const started: number[] = [];
    for (let restarts = 0; restarts < 4; restarts++) {
      node.crash();
      node = await node.restart({
        limits: { maxReplays: 2 },
        observer: { ...NOOP_OBSERVER, replayStarted: (_session, attempt) => started.push(attempt) },
      });
    }
    const after = await resumeToEnd(node, client.transport.sent);
    // The first re-run finds the first run's item (progress); the two after it find nothing more.
    expect(started).toEqual([2, 3, 4]);
    expect(after.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "failure", message: "invocation failed" } });
  });

  it("re-runs that each find more committed than the one before are not bounded: an invocation moved on by many losses while it works succeeds", async () => {
    // Run `attempt` stops at item `attempt`: each run commits one item more than the one before.
    const gate = gates((attempt, i) => i === attempt);
    let node = server({ limits: { maxReplays: 1 } });
    const client = node.open();
    client.send(start("count", v.record(v.u32(8))));
    await client.transport.expect("the first item", (sent) => resultItems(sent).length === 1);
    const started: number[] = [];
    for (let attempt = 2; attempt <= 7; attempt++) {
      node.crash();
      node = await node.restart({
        limits: { maxReplays: 1 },
        observer: { ...NOOP_OBSERVER, replayStarted: (_session, run) => started.push(run) },
      });
      // Committed (a client is sent only what is): the item this run adds, then the loss.
      const reader = node.open();
      reader.send(resumeAttach("takeover", accepted(client.transport.sent).sessionToken, []));
      await reader.transport.expect(`item ${attempt - 1}`, (sent) => u32s(resultItems(sent)).includes(attempt - 1));
    }
    expect(gate.waiting(7, 7)).toBe(true);
    gate.open(7, 7);
    const { transport, send } = node.open();
    send(resumeAttach("takeover", accepted(client.transport.sent).sessionToken, []));
    await transport.expect("invocationFinished", (sent) => sent.some((m) => m.type === "invocationFinished"));
    const after = transport.sent;
    expect(started).toEqual([2, 3, 4, 5, 6, 7]);
    expect(u32s(resultItems(after))).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(after.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  });

  it("a re-run nobody comes back to is given up after limits.detachedSessionTimeoutMs, as after a detach", async () => {
    gates((_attempt, i) => i === 1);
    const first = server();
    const client = first.open();
    client.send(start("count", v.record(v.u32(3))));
    await client.transport.expect("the first item", (sent) => resultItems(sent).length === 1);
    first.crash();
    const timers = new ManualTimers();
    const given: string[] = [];
    const second = await first.restart({
      timers,
      limits: { detachedSessionTimeoutMs: 60_000 },
      observer: { ...NOOP_OBSERVER, sessionGivenUp: (session) => given.push(session.method) },
    });
    timers.advance(60_000);
    expect(given).toEqual(["count"]);
    // The method itself is still held at its gate: its stream ends, the invocation ends as the method does.
    const { transport, send } = second.open();
    send(resumeOf(client.transport.sent));
    await transport.expect("the stream's end", (sent) => sent.some((m) => m.type === "outputStreamEnd"));
    expect(transport.sent.find((m) => m.type === "outputStreamEnd")).toMatchObject({
      outcome: { kind: "cancelled", reason: "transport-detached" },
    });
  });

  it("nested streams: a re-run's groups are the stored streams (matched by place), their items compared, the rest continued", async () => {
    gates((attempt, i) => attempt === 1 && i === 102);
    const first = server();
    const client = first.open();
    client.send(start("nested", v.record(v.u32(4))));
    const groupItems = (sent: readonly ServerMessage[]) =>
      sent.filter((m) => m.type === "outputStreamItem" && typeof m.value.value === "number");
    await client.transport.expect("two groups and their items", (sent) => groupItems(sent).length === 6);
    first.crash();

    const second = await first.restart();
    const { transport, send } = second.open();
    send(resumeOf(client.transport.sent));
    await transport.expect("invocationFinished", (sent) => sent.some((m) => m.type === "invocationFinished"));
    expect(transport.sent.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    const names = transport.sent.flatMap((m) =>
      m.type === "outputStreamItem" && m.value.kind === "record" ? [JSON.stringify(m.value)] : [],
    );
    expect(names).toHaveLength(4);
    expect(
      u32s(groupItems(transport.sent).map((m) => (m.type === "outputStreamItem" ? m.value : v.u32(-1)))).sort((a, b) => a - b),
    ).toEqual([0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32]);
    // The first two groups' streams are the ones the client already had: the same tokens as before the restart.
    const tokensOf = (sent: readonly ServerMessage[]) =>
      sent.flatMap((m) => (m.type === "outputStreamItem" ? m.mappings.map((mapping) => mapping.streamToken) : []));
    expect(tokensOf(transport.sent).slice(0, 2)).toEqual(tokensOf(client.transport.sent).slice(0, 2));
  });

  it("re-runs hold their principal's running slots (limits.maxRunningSessionsPerPrincipal), past the bound if need be: a new start is refused until they end", async () => {
    // Held: count at its item 1, nested before its group 1 (gate 101), in every run.
    const gate = gates((_attempt, i) => i === 1 || i === 101);
    const first = server({ limits: { maxRunningSessionsPerPrincipal: 2 } });
    const counting = first.open();
    counting.send(start("count", v.record(v.u32(3))));
    await counting.transport.expect("the first item", (sent) => resultItems(sent).length === 1);
    const grouping = first.open();
    grouping.send(start("nested", v.record(v.u32(3))));
    await grouping.transport.expect("the first group", (sent) => resultItems(sent).length === 1);
    first.crash();

    // The bound is now 1 and the principal had 2 invocations admitted: both run again, neither is refused.
    const rerun: string[] = [];
    const refused: string[] = [];
    const second = await first.restart({
      limits: { maxRunningSessionsPerPrincipal: 1 },
      observer: {
        ...NOOP_OBSERVER,
        replayStarted: (session) => rerun.push(session.method),
        principalLimitReached: (limit) => refused.push(limit),
      },
    });
    expect(rerun.sort()).toEqual(["count", "nested"]);
    expect(refused).toEqual([]);

    // While they run they count: the same principal's new start waits for them.
    const early = second.open();
    early.send(start("count", v.record(v.u32(0))));
    await early.transport.expect("the refusal", (sent) => sent.some((m) => m.type === "invocationRejected"));
    expect(early.transport.sent.find((m) => m.type === "invocationRejected")).toMatchObject({ code: "overloaded", retryable: true });
    expect(refused).toEqual(["sessions"]);

    gate.open(2, 1);
    gate.open(2, 101);
    expect((await resumeToEnd(second, counting.transport.sent)).at(-1)).toEqual({
      type: "invocationFinished",
      outcome: { kind: "success" },
    });
    expect((await resumeToEnd(second, grouping.transport.sent)).at(-1)).toEqual({
      type: "invocationFinished",
      outcome: { kind: "success" },
    });

    // Both ended, their slots are free again.
    const later = second.open();
    later.send(start("count", v.record(v.u32(0))));
    await later.transport.expect("invocationFinished", (sent) => sent.some((m) => m.type === "invocationFinished"));
    expect(later.transport.sent.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  });

  it("a re-run the store cannot record (its run count refused) is not started: the invocation fails as by default", async () => {
    gates((attempt, i) => attempt === 1 && i === 1);
    const first = server();
    const client = first.open();
    client.send(start("count", v.record(v.u32(3))));
    await client.transport.expect("the first item", (sent) => resultItems(sent).length === 1);
    first.crash();
    const refusing = new Proxy(first.store, {
      get: (target, property) => {
        if (property === "recordRun") return () => Promise.reject(new Error("the database is read-only"));
        const value = Reflect.get(target, property) as unknown;
        // The store's methods use its private fields: called on the store itself.
        return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const after = await resumeToEnd(await first.restart({ store: refusing }), client.transport.sent);
    expect(after.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "failure", message: "invocation failed" } });
  });
});

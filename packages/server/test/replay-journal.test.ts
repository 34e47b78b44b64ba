/**
 * The journal under crashes (docs/durable-execution.md): a method whose
 * steps count their side effects, and a store whose journal writes crash
 * the server at three points — before the entry is committed, while it is
 * (committed, the caller never told), after it (committed and returned) —
 * in many seeded random plans. A crash is `runtime.shutdown()`, and every
 * call of the dead server's store view then hangs, as a killed process's
 * writes never land; the next server (same store: the memory store, or the
 * SQLite store opened again on the same data directory) re-runs the invocation.
 *
 * What must hold: the invocation ends in success with every item once, and
 * each step's effect ran once, plus once more for every crash before its
 * entry was committed (at-least-once for the effect, exactly-once for the
 * journaled result). And a re-run that calls a step of another name where
 * the run before called one fails as non-deterministic.
 */
import { describe, expect, it } from "vitest";
import type { ClientMessage, InvocationStart, SchemaValueJson, ServerMessage } from "@golem-stream/wire";
import { defineAgentType, t } from "@golem-stream/contract";
import { implement, SqliteSessionStore, StaticAgentHost } from "../src/index.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MemorySessionStore, type JournalEntry, type SessionStore } from "../src/store/index.js";
import { REPLAY_DIVERGED } from "../src/invocation/replay-divergence.js";
import { agentStart, v, resumeAttach } from "./helpers.js";
import { memoryHarness } from "./support/memory-session.js";

type Phase = "before" | "during" | "after";
interface Fault {
  readonly step: number;
  readonly phase: Phase;
}

/**
 * Effects by step. A dead server's method may still be scheduled here, which a killed process's
 * is not: calls from runs whose server died (`dead`, by run number) are not effects.
 */
const live = { dead: new Set<number>(), effects: [] as number[], flip: false };

const journey = defineAgentType({
  name: "journey",
  constructor: t.record({}),
  durability: "replay",
  methods: {
    walk: { params: t.record({ n: t.u32() }), result: t.stream(t.string()) },
    renamed: { params: t.record({}), result: t.stream(t.u32()) },
  },
});

const host = new StaticAgentHost({
  t: {
    default: [
      implement(journey, {
        async walk(ctx, { n }) {
          return (async function* () {
            for (let i = 0; i < n; i++) {
              const value = await ctx.step(`effect-${i}`, () => {
                if (!live.dead.has(ctx.attempt)) live.effects[i] = (live.effects[i] ?? 0) + 1;
                return { id: `${i}-${ctx.attempt}` };
              });
              yield `${i}:${value.id}`;
            }
          })();
        },
        async renamed(ctx) {
          await ctx.step(live.flip ? "second-name" : "first-name", () => 1);
          return [0, 1];
        },
      }),
    ],
  },
});

function start(method: string, methodParameters: SchemaValueJson): InvocationStart {
  return agentStart("t", "journey", method, methodParameters);
}

const NEVER = new Promise<never>(() => undefined);

/**
 * The store as one server process sees it. Once `kill()`ed every call hangs.
 * `faults` are consumed in order by journal writes of their step; `crashed`
 * is told when one fires (the test then starts the next server).
 */
function processView(store: SessionStore, faults: Fault[], crashed: () => void) {
  let dead = false;
  const view = new Proxy(store, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      if (property === "appendJournal") {
        return async (entry: JournalEntry, epoch?: bigint): Promise<void> => {
          if (dead) return NEVER;
          const fault = faults[0];
          if (fault === undefined || fault.step !== entry.position) return target.appendJournal!(entry, epoch);
          faults.shift();
          if (fault.phase === "before") {
            dead = true;
            crashed();
            return NEVER;
          }
          await target.appendJournal!(entry, epoch);
          if (fault.phase === "during") {
            dead = true;
            crashed();
            return NEVER;
          }
          // After: the step returned; the process dies before it writes anything more.
          queueMicrotask(() => {
            dead = true;
            crashed();
          });
          return undefined;
        };
      }
      return (...args: unknown[]) => (dead ? NEVER : (value as (...a: unknown[]) => unknown).apply(target, args));
    },
  });
  return { view: view as SessionStore, kill: () => (dead = true) };
}

/** A seeded generator (mulberry32): the same seed, the same plan. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = Math.imul(state ^ (state >>> 15), 1 | state);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** Up to 4 crashes at steps that a run reaches: a committed step is never written again, so a later fault is at a later step. */
function plan(random: () => number, steps: number): Fault[] {
  const faults: Fault[] = [];
  let from = 0;
  for (let n = Math.floor(random() * 5); n > 0 && from < steps; n--) {
    const step = from + Math.floor(random() * (steps - from));
    const phase = (["before", "during", "after"] as const)[Math.floor(random() * 3)] as Phase;
    faults.push({ step, phase });
    from = phase === "before" ? step : step + 1;
  }
  return faults;
}

function sharedMemoryStore(): () => SessionStore {
  const store = new MemorySessionStore();
  return () => store;
}

const finished = (sent: readonly ServerMessage[]) => sent.some((m) => m.type === "invocationFinished");

/**
 * Runs `walk(steps)` through `faults`, a server per crash; resolves to the client's messages after
 * the last one. `openStore` is called for each server: the same memory store, or the SQLite store
 * opened again on the same data directory, as a restarted process opens it.
 */
async function walkThrough(
  steps: number,
  faults: Fault[],
  openStore: () => SessionStore | Promise<SessionStore> = sharedMemoryStore(),
): Promise<ServerMessage[]> {
  let keyring: ReturnType<typeof memoryHarness>["keyring"] | undefined;
  // What the next server is sent: the start, then a resume with the newest token. A message whose
  // acceptance never arrived is sent again as it was (an exact replay of its attempt), since the
  // server may have committed it before it died.
  let attach: ClientMessage = start("walk", v.record(v.u32(steps)));
  live.dead.clear();
  live.effects = [];
  for (let servers = 0; ; servers++) {
    let crashedNow = false;
    // Every server re-runs the invocation: its run is number `servers + 1`, dead from the crash on.
    const process = processView(await openStore(), faults, () => {
      crashedNow = true;
      live.dead.add(servers + 1);
    });
    const harness = memoryHarness({ host, store: process.view, ...(keyring === undefined ? {} : { keyring }), limits: { maxReplays: 10 } });
    keyring = harness.keyring;
    await harness.runtime.recoverInterrupted();
    const { transport, send } = harness.open();
    send(attach);
    await transport.expect("the end or a crash", (sent) => crashedNow || finished(sent));
    const accepted = transport.sent.find((m) => m.type === "invocationAccepted");
    if (accepted?.type === "invocationAccepted") attach = resumeAttach("resume", accepted.sessionToken);
    if (!crashedNow) return [...transport.sent];
    harness.runtime.shutdown();
    process.kill();
  }
}

/** Walks seeded plans `seeds` through the stores `openStores(seed)` gives, checking each outcome. */
async function walkSeeds(
  seeds: number,
  openStores: (seed: number) => { open: () => SessionStore | Promise<SessionStore>; close: () => Promise<void> },
): Promise<void> {
  const steps = 6;
  for (let seed = 1; seed <= seeds; seed++) {
    const faults = plan(seeded(seed), steps);
    const planned = [...faults];
    const stores = openStores(seed);
    let messages: ServerMessage[];
    try {
      messages = await walkThrough(steps, faults, stores.open);
    } finally {
      await stores.close();
    }
    const where = `seed ${seed}, plan ${JSON.stringify(planned)}`;
    expect(faults, where).toEqual([]);
    expect(messages.at(-1), where).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
    const items = messages.flatMap((m) => (m.type === "outputStreamItem" ? [m.value.value as string] : []));
    // Every item once, each with the id its step's first committed run returned.
    expect(
      items.map((item) => item.split(":")[0]),
      where,
    ).toEqual(Array.from({ length: steps }, (_, i) => String(i)));
    // Once, and once more for each crash before the step's entry was committed.
    const expected = Array.from({ length: steps }, (_, i) => 1 + planned.filter((f) => f.step === i && f.phase === "before").length);
    expect(live.effects, where).toEqual(expected);
  }
}

describe("journal: a step's effect once per committed step, across crashes at the journal write", () => {
  it("many seeded plans of crashes before, during and after a step's commit", async () => {
    await walkSeeds(60, () => ({ open: sharedMemoryStore(), close: async () => undefined }));
  });

  it("the same on the SQLite store, opened again from its data directory by each server", async () => {
    // Each server opens the store anew: what the re-run reads is what reached the database file.
    // The store holds its data directory alone, so the dead server's is closed first; closing
    // lets the writes it had taken before the crash finish, which is a crash just after them (the
    // dead server's journal writes from the crash on never reach it: its view swallows them).
    await walkSeeds(20, (seed) => {
      const dataDir = mkdtempSync(join(tmpdir(), `golem-stream-journal-${seed}-`));
      let current: SqliteSessionStore | undefined;
      return {
        open: async () => {
          await current?.close();
          current = new SqliteSessionStore({ dataDir, synchronous: "normal" });
          return current;
        },
        close: async () => {
          await current?.close();
          rmSync(dataDir, { recursive: true, force: true });
        },
      };
    });
  }, 30_000);
});

describe("journal: a re-run whose step at a position has another name", () => {
  it("fails the invocation with the documented message", async () => {
    const store = new MemorySessionStore();
    live.flip = false;
    let crashedNow = false;
    const first = processView(store, [{ step: 0, phase: "during" }], () => (crashedNow = true));
    const before = memoryHarness({ host, store: first.view });
    const client = before.open();
    client.send(start("renamed", v.record()));
    await client.transport.expect("the crash", () => crashedNow);
    const accepted = client.transport.sent.find((m) => m.type === "invocationAccepted");
    if (accepted?.type !== "invocationAccepted") throw new Error("not accepted");
    before.runtime.shutdown();
    first.kill();

    live.flip = true;
    const after = memoryHarness({ host, store: processView(store, [], () => undefined).view, keyring: before.keyring });
    await after.runtime.recoverInterrupted();
    const { transport, send } = after.open();
    send(resumeAttach("resume", accepted.sessionToken));
    await transport.expect("the end", finished);
    expect(transport.sent.at(-1)).toEqual({
      type: "invocationFinished",
      outcome: { kind: "failure", code: "invocation-failed", message: REPLAY_DIVERGED },
    });
  });
});

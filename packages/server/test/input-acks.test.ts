/**
 * Input ACKs of items that introduce no stream: the session's one reaction to each commit tells
 * the attachment (attachment-input.ts, `#commits`), which acknowledges once the commit is done,
 * cumulatively for everything committed together, and never for a commit that failed. The
 * store here holds every input commit until the test lets it go, so what is sent while a commit
 * is pending is exactly what the server sends before its commit.
 *
 * Every test runs three times: against a store whose `acceptInput` answers with a promise,
 * against one that also offers `acceptInputWatched` (the commit told to one small object per
 * chunk, watched-input-commit.ts), which the session then uses for these items, and against one
 * that also offers `joinInputWatched` (the SQLite store's: a chunk joins the write of the one
 * before it while that waits for its commit, and one outcome covers both).
 */
import { describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import type { InputStreamAck } from "@golem-stream/wire";
import { MemorySessionStore } from "../src/index.js";
import { type InputChunk, type InputCommitWatcher, type InputTerminal, type NewStream } from "../src/store/index.js";
import { demoStart, v } from "./helpers.js";
import { memoryHarness } from "./support/memory-session.js";
import { NodeBudget } from "../src/invocation/node-budget.js";
import { resolveLimits } from "../src/index.js";

/** The memory store, each input commit held (committed, not yet reported) until `release` or `fail`. */
class HeldCommits extends MemorySessionStore {
  readonly #held: { chunk: InputChunk; committed: Promise<void>; resolve: () => void; reject: (error: Error) => void }[] = [];
  #waiter: { count: number; resolve: () => void } | undefined;
  /** Input terminals handed to the store (not held: the memory store records them at once, behind the chunks before). */
  ends = 0;

  override endInput(streamId: string, terminal: InputTerminal, epoch?: bigint): Promise<void> {
    this.ends++;
    return super.endInput(streamId, terminal, epoch);
  }

  override acceptInput(chunk: InputChunk, introduced: readonly NewStream[]): Promise<void> {
    const committed = super.acceptInput(chunk, introduced);
    return new Promise<void>((resolve, reject) => {
      this.#held.push({ chunk, committed, resolve, reject });
      if (this.#waiter !== undefined && this.#held.length >= this.#waiter.count) this.#waiter.resolve();
    });
  }
  /** Resolves once `count` input commits are held. */
  holding(count: number): Promise<void> {
    if (this.#held.length >= count) return Promise.resolve();
    return new Promise((resolve) => (this.#waiter = { count, resolve }));
  }
  /** Reports the held commits in order; the one at `failAt` (a sequence) fails, as a disk error would. */
  async release(failAt?: bigint): Promise<void> {
    for (const held of this.#held.splice(0)) {
      await held.committed;
      if (held.chunk.sequence === failAt) held.reject(new Error("disk I/O error"));
      else held.resolve();
    }
  }
}

/** The same store, telling each input commit to a watcher (in the order handed over) as the SQLite store does. */
class HeldWatchedCommits extends HeldCommits {
  /** Chunks handed over through `acceptInputWatched`: the session took the watched path. */
  watched = 0;
  acceptInputWatched(chunk: InputChunk, _epoch: bigint | undefined, watcher: InputCommitWatcher): void {
    this.watched++;
    this.acceptInput(chunk, []).then(
      () => watcher.inputSettled(undefined),
      (error: Error) => watcher.inputSettled(error),
    );
  }
}

/**
 * The same store, joining each chunk to the write of the chunk before it (same watcher) until
 * the held commits are released, as the SQLite store joins them until its group commits: the
 * watcher is told once, when every chunk of its write has settled (failed if any failed).
 */
class HeldJoinedCommits extends HeldWatchedCommits {
  #open: { watcher: InputCommitWatcher; commits: Promise<void>[] } | undefined;
  /** Chunks that joined another's write. */
  joined = 0;
  override acceptInputWatched(chunk: InputChunk, _epoch: bigint | undefined, watcher: InputCommitWatcher): void {
    this.watched++;
    const open = { watcher, commits: [this.acceptInput(chunk, [])] };
    this.#open = open;
    const settle = (): void => {
      const count = open.commits.length;
      void Promise.allSettled(open.commits).then((outcomes) => {
        if (open.commits.length !== count) return settle();
        const failed = outcomes.find((outcome) => outcome.status === "rejected");
        watcher.inputSettled(failed === undefined ? undefined : (failed.reason as Error));
      });
    };
    settle();
  }
  joinInputWatched(chunk: InputChunk, _epoch: bigint | undefined, watcher: InputCommitWatcher): boolean {
    if (this.#open?.watcher !== watcher) return false;
    this.joined++;
    this.#open.commits.push(this.acceptInput(chunk, []));
    return true;
  }
  override release(failAt?: bigint): Promise<void> {
    this.#open = undefined; // what was handed over commits now: nothing joins it any more
    return super.release(failAt);
  }
}

/** Turns of the event loop in which an ACK sent at acceptance (before any commit) would have gone out. */
async function turns(count: number): Promise<void> {
  for (let i = 0; i < count; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

const STORES = [
  { name: "commits answered with a promise", make: () => new HeldCommits() },
  { name: "commits told to a watcher", make: () => new HeldWatchedCommits() },
  { name: "writes joined, their commit told to one watcher", make: () => new HeldJoinedCommits() },
];

async function withHeldCommits(make: () => HeldCommits, method: string, items: number) {
  const store = make();
  const budget = new NodeBudget(resolveLimits().maxQueuedBytesPerNode);
  const { open } = memoryHarness({ store, nodeBudget: budget });
  const { transport, send } = open();
  send(demoStart(method, v.record(v.stream(randomUUID()))));
  await transport.expect("invocationAccepted", (sent) => sent.some((m) => m.type === "invocationAccepted"));
  const accepted = transport.sent.find((m) => m.type === "invocationAccepted");
  const channel = accepted?.type === "invocationAccepted" ? (accepted.mappings[0]?.channel ?? 0) : 0;
  for (let i = 0; i < items; i++) send({ type: "inputStreamItem", channel, sequence: BigInt(i), value: v.str(`item ${i}`) });
  await store.holding(items);
  await turns(20);
  const acks = (): InputStreamAck[] => transport.sent.filter((m): m is InputStreamAck => m.type === "inputStreamAck");
  return { store, transport, acks, send, channel, budget };
}

describe.each(STORES)("$name", ({ make }) => {
  it("an item is acknowledged only once its commit is done, and items committed together share one cumulative ACK", async () => {
    const { store, transport, acks } = await withHeldCommits(make, "tally", 3);
    expect(acks()).toEqual([]); // every item handed over, none committed: nothing acknowledged
    await store.release();
    await transport.expect("the ACK of the three items", () => acks().length > 0);
    expect(acks().map((ack) => ack.highestContiguousSequence)).toEqual([3n]);
    expect(acks()[0]?.terminal).toBe(false);
  });

  it("a commit that fails is never acknowledged, nor anything after it; the invocation fails", async () => {
    const { store, transport, acks } = await withHeldCommits(make, "tally", 3);
    await store.release(1n);
    await transport.expectClose("the failed commit");
    expect(acks().every((ack) => ack.highestContiguousSequence <= 1n)).toBe(true);
  });

  it("an end behind held items goes to the store behind them at once, and is acknowledged only after their commits; every permit comes back", async () => {
    const { store, transport, acks, send, channel, budget } = await withHeldCommits(make, "tally", 3);
    send({ type: "inputStreamEnd", channel, sequence: 3n });
    await turns(20);
    // One node: the store keeps the order of what it is handed, so the end shares the items' commit.
    expect(store.ends).toBe(1);
    expect(acks()).toEqual([]); // neither the items' ACK nor the terminal's
    expect(budget.held).toBeGreaterThan(0); // the store's copies, until their commits
    await store.release();
    await transport.expect("the terminal ACK", () => acks().some((ack) => ack.terminal));
    expect(acks().every((ack) => ack.highestContiguousSequence === 3n)).toBe(true);
    await transport.expect("the result", (sent) => sent.some((m) => m.type === "invocationResult"));
    expect(budget.held).toBe(0);
  });

  it("items reach the agent once each, in order, whether their commits are held or not", async () => {
    const { store, transport, send, channel } = await withHeldCommits(make, "reverse", 4);
    await store.release();
    for (let i = 4; i < 8; i++) send({ type: "inputStreamItem", channel, sequence: BigInt(i), value: v.str(`item ${i}`) });
    await store.holding(4);
    await store.release();
    send({ type: "inputStreamEnd", channel, sequence: 8n });
    const outputs = (): unknown[] =>
      transport.sent.flatMap((m) => (m.type === "outputStreamItem" && m.value.kind === "string" ? [m.value.value] : []));
    await transport.expect("eight reversed items", () => outputs().length >= 8);
    expect(outputs()).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((i) => [...`item ${i}`].reverse().join("")));
  });
});

it("the session hands a watching store every item that introduces no stream", async () => {
  const { store, transport, acks } = await withHeldCommits(() => new HeldWatchedCommits(), "tally", 3);
  expect((store as HeldWatchedCommits).watched).toBe(3);
  await store.release();
  await transport.expect("the ACK", () => acks().length > 0);
});

it("a store that joins writes: the items of a burst share one watcher, and each is still owed its ACK until that one outcome", async () => {
  const { store, transport, acks, send, channel, budget } = await withHeldCommits(() => new HeldJoinedCommits(), "tally", 5);
  const joining = store as HeldJoinedCommits;
  expect(joining.watched).toBe(1); // the first item's write...
  expect(joining.joined).toBe(4); // ...and every later one joined it
  send({ type: "inputStreamEnd", channel, sequence: 5n });
  await turns(20);
  expect(acks()).toEqual([]);
  await store.release();
  await transport.expect("the end of the invocation", (sent) => sent.some((m) => m.type === "invocationFinished"));
  expect(acks().map((ack) => ack.highestContiguousSequence)).toContain(5n);
  expect(budget.held).toBe(0); // the permits of all five items came back with the one outcome
});

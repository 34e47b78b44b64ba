/**
 * Input ACKs of items that introduce no stream: the session's one reaction to each commit tells
 * the attachment (attachment-input.ts, `#commits`), which acknowledges once the commit is done,
 * cumulatively for everything committed together, and never for a commit that failed. The
 * store here holds every input commit until the test lets it go, so what is sent while a commit
 * is pending is exactly what the server sends before its commit.
 */
import { expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import type { InputStreamAck } from "@golem-stream/wire";
import { MemorySessionStore } from "../src/index.js";
import { type InputChunk, type NewStream } from "../src/store/index.js";
import { demoStart, v } from "./helpers.js";
import { memoryHarness } from "./support/memory-session.js";

/** The memory store, each input commit held (committed, not yet reported) until `release` or `fail`. */
class HeldCommits extends MemorySessionStore {
  readonly #held: { chunk: InputChunk; committed: Promise<void>; resolve: () => void; reject: (error: Error) => void }[] = [];
  #waiter: { count: number; resolve: () => void } | undefined;

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

/** Turns of the event loop in which an ACK sent at acceptance (before any commit) would have gone out. */
async function turns(count: number): Promise<void> {
  for (let i = 0; i < count; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

async function tallyWithHeldCommits(items: number) {
  const store = new HeldCommits();
  const { open } = memoryHarness({ store });
  const { transport, send } = open();
  send(demoStart("tally", v.record(v.stream(randomUUID()))));
  await transport.expect("invocationAccepted", (sent) => sent.some((m) => m.type === "invocationAccepted"));
  const accepted = transport.sent.find((m) => m.type === "invocationAccepted");
  const channel = accepted?.type === "invocationAccepted" ? (accepted.mappings[0]?.channel ?? 0) : 0;
  for (let i = 0; i < items; i++) send({ type: "inputStreamItem", channel, sequence: BigInt(i), value: v.str(`item ${i}`) });
  await store.holding(items);
  await turns(20);
  const acks = (): InputStreamAck[] => transport.sent.filter((m): m is InputStreamAck => m.type === "inputStreamAck");
  return { store, transport, acks };
}

it("an item is acknowledged only once its commit is done, and items committed together share one cumulative ACK", async () => {
  const { store, transport, acks } = await tallyWithHeldCommits(3);
  expect(acks()).toEqual([]); // every item handed over, none committed: nothing acknowledged
  await store.release();
  await transport.expect("the ACK of the three items", () => acks().length > 0);
  expect(acks().map((ack) => ack.highestContiguousSequence)).toEqual([3n]);
  expect(acks()[0]?.terminal).toBe(false);
});

it("a commit that fails is never acknowledged, nor anything after it; the invocation fails", async () => {
  const { store, transport, acks } = await tallyWithHeldCommits(3);
  await store.release(1n);
  await transport.expectClose("the failed commit");
  expect(acks().every((ack) => ack.highestContiguousSequence <= 1n)).toBe(true);
});

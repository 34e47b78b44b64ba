/**
 * `Journal` alone (invocation/journal.ts): what `ctx.step` stores and gives
 * back, on a first run and on a re-run over the stored entries.
 */
import { describe, expect, it } from "vitest";
import type { JournalEntry } from "../src/store/index.js";
import { Journal } from "../src/invocation/journal.js";
import { ReplayDivergence } from "../src/invocation/replay-divergence.js";

function recording(): { entries: JournalEntry[]; append(entry: JournalEntry): Promise<void> } {
  const entries: JournalEntry[] = [];
  return { entries, append: async (entry) => void entries.push(entry) };
}

describe("Journal", () => {
  it("stores a step's JSON result, its error, and nothing for undefined; a re-run gets them back without calling the step", async () => {
    const store = recording();
    const first = new Journal("s", store);
    const at = new Date(0);
    expect(await first.step("when", () => ({ at }))).toEqual({ at: "1970-01-01T00:00:00.000Z" });
    await expect(first.step("fails", () => Promise.reject(new RangeError("no such account")))).rejects.toMatchObject({
      name: "RangeError",
      message: "no such account",
    });
    expect(await first.step("nothing", () => undefined)).toBeUndefined();
    expect(store.entries).toEqual([
      { sessionId: "s", position: 0, name: "when", outcome: '{"value":{"at":"1970-01-01T00:00:00.000Z"}}' },
      { sessionId: "s", position: 1, name: "fails", outcome: '{"error":{"message":"no such account","name":"RangeError"}}' },
      { sessionId: "s", position: 2, name: "nothing", outcome: "{}" },
    ]);

    let calls = 0;
    const again = new Journal("s", recording(), store.entries);
    const never = () => {
      calls++;
      return "other";
    };
    expect(await again.step("when", never)).toEqual({ at: "1970-01-01T00:00:00.000Z" });
    await expect(again.step("fails", never)).rejects.toMatchObject({ name: "RangeError", message: "no such account" });
    expect(await again.step("nothing", never)).toBeUndefined();
    expect(calls).toBe(0);
    // Past the stored entries the steps run and are stored again.
    expect(await again.step("new", () => 7)).toBe(7);
    expect(calls).toBe(0);
  });

  it("positions follow the calls, not the completions", async () => {
    const store = recording();
    const journal = new Journal("s", store);
    let release: () => void = () => undefined;
    const slow = journal.step("slow", () => new Promise<number>((resolve) => (release = () => resolve(1))));
    await journal.step("fast", () => 2);
    release();
    await slow;
    expect(store.entries.map((e) => [e.position, e.name])).toEqual([
      [1, "fast"],
      [0, "slow"],
    ]);
  });

  it("a step of another name at a stored position is non-determinism, reported even if the method catches it", async () => {
    const reported: ReplayDivergence[] = [];
    const journal = new Journal("s", recording(), [{ sessionId: "s", position: 0, name: "charge", outcome: "{}" }], (d) =>
      reported.push(d),
    );
    await expect(journal.step("refund", () => 1)).rejects.toBeInstanceOf(ReplayDivergence);
    expect(reported).toHaveLength(1);
  });

  it("a result JSON cannot write fails the step before anything is stored; without a store steps only run", async () => {
    const store = recording();
    await expect(new Journal("s", store).step("big", () => 1n)).rejects.toThrow(TypeError);
    expect(store.entries).toEqual([]);
    const plain = new Journal("s", undefined);
    const at = new Date(0);
    expect(await plain.step("when", () => at)).toBe(at);
    await expect(plain.step("", () => 1)).rejects.toThrow(TypeError);
  });
});

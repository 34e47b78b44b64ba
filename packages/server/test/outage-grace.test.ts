/**
 * The grace of a store outage, on a clock the test moves: when work is tried
 * again, how the waits grow, when it gives up, and what it reports.
 */
import { describe, expect, it } from "vitest";
import { checkOutageGraceMs, OutageGrace, type OutageClock, type StoreOutageEvent } from "../src/store/outage-grace.js";

/** A clock whose waits move it forward by exactly the wait. */
function steppingClock(): OutageClock & { time: number; waits: number[] } {
  const clock = {
    time: 0,
    waits: [] as number[],
    now: () => clock.time,
    sleep: async (ms: number) => {
      clock.waits.push(ms);
      clock.time += ms;
    },
  };
  return clock;
}

function graceOn(graceMs: number): { grace: OutageGrace; clock: ReturnType<typeof steppingClock>; events: StoreOutageEvent[] } {
  const clock = steppingClock();
  const events: StoreOutageEvent[] = [];
  const grace = new OutageGrace(graceMs, clock, () => (event) => events.push(event));
  return { grace, clock, events };
}

describe("OutageGrace", () => {
  it("retries with waits doubling from 100 ms up to 2 s, never past the grace, then gives up", async () => {
    const { grace, clock } = graceOn(5000);
    let tries = 0;
    while (await grace.retry(new Error("Connection terminated unexpectedly"))) tries++;
    expect(clock.waits).toEqual([100, 200, 400, 800, 1600, 1900]);
    expect(tries).toBe(6);
    expect(clock.time).toBe(5000);
  });

  it("after the grace is spent, later failures give up at once until a success ends the outage", async () => {
    const { grace, clock, events } = graceOn(300);
    while (await grace.retry(new Error("down"))) {
      /* waits out the grace */
    }
    grace.exceeded(3);
    const before = clock.waits.length;
    expect(await grace.retry(new Error("still down"))).toBe(false);
    expect(clock.waits.length).toBe(before);
    grace.available();
    expect(grace.down).toBe(false);
    expect(await grace.retry(new Error("down again"))).toBe(true);
    expect(events.map((e) => e.kind)).toEqual(["unavailable", "retry", "retry", "grace-exceeded", "available", "unavailable", "retry"]);
    expect(events[3]).toEqual({ kind: "grace-exceeded", seconds: 0.3, writes: 3, error: "down" });
  });

  it("a success reports how long the outage lasted, and resets the waits", async () => {
    const { grace, clock, events } = graceOn(10_000);
    await grace.retry(new Error("a"));
    await grace.retry(new Error("b"));
    grace.available();
    expect(events.at(-1)).toEqual({ kind: "available", seconds: 0.3 });
    clock.waits.length = 0;
    await grace.retry(new Error("c"));
    expect(clock.waits).toEqual([100]);
    grace.available();
    grace.available();
    expect(events.filter((e) => e.kind === "available")).toHaveLength(2);
  });

  it("a grace of 0 never retries", async () => {
    const { grace, clock } = graceOn(0);
    expect(await grace.retry(new Error("x"))).toBe(false);
    expect(clock.waits).toEqual([]);
  });

  it("a throwing listener changes nothing", async () => {
    const clock = steppingClock();
    const grace = new OutageGrace(1000, clock, () => () => {
      throw new Error("observer bug");
    });
    expect(await grace.retry(new Error("x"))).toBe(true);
  });

  it("checks the option", () => {
    expect(checkOutageGraceMs(undefined)).toBe(30_000);
    expect(checkOutageGraceMs(0)).toBe(0);
    for (const bad of [-1, 1.5, Number.NaN, "30"])
      expect(() => checkOutageGraceMs(bad, "storeOutageGraceMs")).toThrow(/storeOutageGraceMs must be a non-negative integer/);
  });
});

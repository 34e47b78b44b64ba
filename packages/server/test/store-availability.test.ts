/**
 * When a cluster node may claim other nodes' sessions: only after a full lease of its own
 * heartbeats without a break, so an outage of the store that lapsed every lease at once does not
 * make the first node back fail everyone else's invocations. Times are given, not waited for.
 */
import { describe, expect, it } from "vitest";
import { StoreAvailability } from "../src/cluster/store-availability.js";

const TTL = 9000;
const PERIOD = 3000;

/** Heartbeats answered every period from `from` up to `to` (inclusive). */
function beat(availability: StoreAvailability, from: number, to: number): void {
  for (let at = from; at <= to; at += PERIOD) availability.succeeded(at);
}

describe("StoreAvailability", () => {
  it("a node that just joined claims nothing before a full lease of heartbeats", () => {
    const availability = new StoreAvailability(TTL, PERIOD);
    expect(availability.mayClaim(0)).toBe(false);
    beat(availability, 0, 6000);
    expect(availability.mayClaim(6000)).toBe(false);
    beat(availability, 9000, 9000);
    expect(availability.mayClaim(9000)).toBe(true);
  });

  it("after a failed heartbeat (the store was down for every node) it waits a full lease again", () => {
    const availability = new StoreAvailability(TTL, PERIOD);
    beat(availability, 0, 30_000);
    expect(availability.mayClaim(30_000)).toBe(true);
    // The store is down from 31 s to 50 s: the heartbeats at 33 s ... 48 s fail; every lease lapses.
    availability.failed();
    expect(availability.mayClaim(40_000)).toBe(false);
    // Back at 51 s: the other nodes renew within a heartbeat period, so claiming must wait a lease.
    beat(availability, 51_000, 57_000);
    expect(availability.mayClaim(57_000)).toBe(false);
    beat(availability, 60_000, 60_000);
    expect(availability.mayClaim(60_000)).toBe(true);
  });

  it("heartbeats that hung through an outage and then answered are a break too", () => {
    const availability = new StoreAvailability(TTL, PERIOD);
    beat(availability, 0, 30_000);
    // Nothing failed: the heartbeats sent at 33 s and 36 s were answered only at 45 s.
    availability.succeeded(45_000);
    expect(availability.mayClaim(45_000)).toBe(false);
    beat(availability, 48_000, 51_000);
    expect(availability.mayClaim(51_000)).toBe(false);
    beat(availability, 54_000, 54_000);
    expect(availability.mayClaim(54_000)).toBe(true);
  });

  it("a node that has not heard from the store lately claims nothing, even after a long run", () => {
    const availability = new StoreAvailability(TTL, PERIOD);
    beat(availability, 0, 30_000);
    expect(availability.mayClaim(36_000)).toBe(true);
    expect(availability.mayClaim(36_001)).toBe(false);
  });

  it("an answer that arrives late, out of order, does not move the last answer back", () => {
    const availability = new StoreAvailability(TTL, PERIOD);
    beat(availability, 0, 12_000);
    availability.succeeded(11_000);
    expect(availability.mayClaim(18_000)).toBe(true);
  });
});

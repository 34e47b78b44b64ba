/** The failed-authentication table: bounded, keyed per IPv4 address and per IPv6 /64. */
import { describe, expect, it } from "vitest";
import { ProtocolError } from "@golem-stream/wire";
import { AuthThrottle, keyOf, MAX_WAITING_AUTHENTICATIONS } from "../src/transport/auth-throttle.js";

/** What an authenticator that refused the credential throws. */
const GUESSED_WRONG = new ProtocolError("unauthenticated", "the bearer token is not valid");

describe("AuthThrottle", () => {
  it("the table remembers at most maxAddresses addresses, forgetting the least recently failed", () => {
    const throttle = new AuthThrottle({ maxFailures: 1, windowMs: 1000, maxAddresses: 2 }, () => 0);
    for (const address of ["10.0.0.1", "10.0.0.2", "10.0.0.3"]) throttle.failed(address);
    expect(throttle.size).toBe(2);
    expect(() => throttle.check("10.0.0.1")).not.toThrow(); // forgotten
    expect(() => throttle.check("10.0.0.3")).toThrow(/too many failed authentications/);
  });

  it("a throttled address outlasts a flood of single failures from more addresses than the table holds", () => {
    const throttle = new AuthThrottle({ maxFailures: 3, windowMs: 60_000, maxAddresses: 100 }, () => 0);
    for (let i = 0; i < 3; i++) throttle.failed("10.9.9.9");
    for (let i = 0; i < 1000; i++) throttle.failed(`10.0.${i >> 8}.${i & 255}`);
    expect(throttle.size).toBe(100);
    expect(() => throttle.check("10.9.9.9")).toThrow(/too many failed authentications/);
    // The flood's own addresses are forgotten oldest first.
    throttle.failed("10.0.0.0");
    throttle.failed("10.0.0.0");
    expect(() => throttle.check("10.0.0.0")).not.toThrow();
  });

  it("a full table forgets throttled addresses whose window ended before any counting one", () => {
    let now = 0;
    const throttle = new AuthThrottle({ maxFailures: 2, windowMs: 1000, maxAddresses: 2 }, () => now);
    throttle.failed("10.0.0.1");
    throttle.failed("10.0.0.1"); // throttled
    now = 900;
    throttle.failed("10.0.0.2"); // counting: 1 of 2
    now = 1200; // 10.0.0.1's window has ended, 10.0.0.2's has not
    throttle.failed("10.0.0.3");
    expect(throttle.size).toBe(2);
    throttle.failed("10.0.0.2"); // still remembered: its second failure throttles it
    expect(() => throttle.check("10.0.0.2")).toThrow(/too many/);
  });

  it("a full table of throttled addresses forgets the earliest throttled", () => {
    const throttle = new AuthThrottle({ maxFailures: 1, windowMs: 1000, maxAddresses: 2 }, () => 0);
    for (const address of ["10.0.0.1", "10.0.0.2", "10.0.0.3"]) throttle.failed(address);
    expect(() => throttle.check("10.0.0.1")).not.toThrow();
    expect(() => throttle.check("10.0.0.2")).toThrow(/too many/);
    expect(() => throttle.check("10.0.0.3")).toThrow(/too many/);
  });

  it("IPv6 addresses count per /64, IPv4-mapped ones as IPv4", () => {
    expect(keyOf("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
    expect(keyOf("2001:0db8:0001:0002:bbbb:0:0:2")).toBe("2001:db8:1:2::/64");
    expect(keyOf("::1")).toBe("0:0:0:0::/64");
    expect(keyOf("::ffff:192.0.2.7")).toBe("192.0.2.7");
    expect(keyOf("192.0.2.7")).toBe("192.0.2.7");
  });

  it("forgets an address when its window ends, and 0 failures allowed turns it off", () => {
    let now = 0;
    const throttle = new AuthThrottle({ maxFailures: 1, windowMs: 1000, maxAddresses: 10 }, () => now);
    throttle.failed("10.0.0.1");
    expect(() => throttle.check("10.0.0.1")).toThrow(/too many/);
    now = 1000;
    expect(() => throttle.check("10.0.0.1")).not.toThrow();
    expect(throttle.size).toBe(0);
    const off = new AuthThrottle({ maxFailures: 0, windowMs: 1000, maxAddresses: 10 }, () => 0);
    off.failed("10.0.0.1");
    expect(() => off.check("10.0.0.1")).not.toThrow();
    expect(off.size).toBe(0);
  });

  it("admits at once no more authentications of one address than it has failures left: a burst of guesses reaches the authenticator at most that often", async () => {
    const throttle = new AuthThrottle({ maxFailures: 3, windowMs: 60_000, maxAddresses: 10 }, () => 0);
    let running = 0;
    let most = 0;
    let calls = 0;
    /** A guess: admitted, then it fails a turn of the event loop later (an authenticator that awaits). */
    const guess = async (): Promise<string> => {
      let admission;
      try {
        admission = await throttle.admit("10.0.0.1");
      } catch {
        return "refused";
      }
      calls++;
      most = Math.max(most, ++running);
      await new Promise((resolve) => setImmediate(resolve));
      running--;
      admission.settled(GUESSED_WRONG);
      return "failed";
    };
    const outcomes = await Promise.all(Array.from({ length: 50 }, guess));
    expect(calls).toBe(3);
    expect(most).toBe(3);
    expect(outcomes.filter((o) => o === "failed")).toHaveLength(3);
    expect(outcomes.filter((o) => o === "refused")).toHaveLength(47);
    await expect(throttle.admit("10.0.0.1")).rejects.toThrow(/too many failed authentications/);
  });

  it("a burst of good authentications from one address all go through, as many at once as it has failures left", async () => {
    const throttle = new AuthThrottle({ maxFailures: 2, windowMs: 60_000, maxAddresses: 10 }, () => 0);
    throttle.failed("10.0.0.2"); // one failure left: one at a time
    let running = 0;
    let most = 0;
    const good = async (): Promise<void> => {
      const admission = await throttle.admit("10.0.0.2");
      most = Math.max(most, ++running);
      await new Promise((resolve) => setImmediate(resolve));
      running--;
      admission.settled();
    };
    await Promise.all(Array.from({ length: 20 }, good));
    expect(most).toBe(1);
    // Another address is not held back by this one's turns.
    const other = await throttle.admit("10.0.0.3");
    other.settled();
  });

  it("refuses an authentication at once when as many of its address's wait for their turn as the bound allows", async () => {
    const throttle = new AuthThrottle({ maxFailures: 1, windowMs: 60_000, maxAddresses: 10 }, () => 0);
    const first = await throttle.admit("10.0.0.4");
    const waiting = Array.from({ length: MAX_WAITING_AUTHENTICATIONS }, () => throttle.admit("10.0.0.4"));
    await expect(throttle.admit("10.0.0.4")).rejects.toThrow(/too many authentications from this address at once/);
    // They are let through in turn as the ones before them succeed.
    first.settled();
    for (const next of waiting) (await next).settled();
  });

  it("a turn handed to one waiting is never taken by a new arrival, even when the ones running end in the same turn", async () => {
    const throttle = new AuthThrottle({ maxFailures: 2, windowMs: 60_000, maxAddresses: 10 }, () => 0);
    let running = 0;
    let most = 0;
    const authenticate = async (): Promise<() => void> => {
      const admission = await throttle.admit("10.0.0.5");
      most = Math.max(most, ++running);
      return () => {
        running--;
        admission.settled();
      };
    };
    const a = await authenticate();
    const b = await authenticate();
    const waiting = authenticate(); // two run: it waits
    await Promise.resolve();
    // Both end together (they awaited one key set fetch, say): the one waiting takes a turn.
    a();
    b();
    const w = await waiting;
    const x = await authenticate();
    let yRuns = false;
    const y = authenticate().then((done) => {
      yRuns = true;
      return done;
    });
    // Every microtask run: two run again (w and x), so y waits.
    await new Promise((resolve) => setImmediate(resolve));
    expect(yRuns).toBe(false);
    w();
    (await y)();
    x();
    expect(most).toBe(2);
    // Nothing is left behind: a new arrival runs at once.
    (await authenticate())();
  });
});

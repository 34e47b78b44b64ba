/** The failed-authentication table: bounded, keyed per IPv4 address and per IPv6 /64. */
import { describe, expect, it } from "vitest";
import { AuthThrottle, keyOf } from "../src/transport/auth-throttle.js";

describe("AuthThrottle", () => {
  it("the table remembers at most maxAddresses addresses, forgetting the least recently failed", () => {
    const throttle = new AuthThrottle({ maxFailures: 1, windowMs: 1000, maxAddresses: 2 }, () => 0);
    for (const address of ["10.0.0.1", "10.0.0.2", "10.0.0.3"]) throttle.failed(address);
    expect(throttle.size).toBe(2);
    expect(() => throttle.check("10.0.0.1")).not.toThrow(); // forgotten
    expect(() => throttle.check("10.0.0.3")).toThrow(/too many failed authentications/);
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
});

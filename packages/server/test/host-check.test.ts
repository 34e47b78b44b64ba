/** Reading a Host header, and `*` in publicHosts (the endpoints themselves: host-check.e2e.test.ts). */
import { describe, expect, it } from "vitest";
import { HostCheck, hostnameOf } from "../src/transport/host-check.js";

describe("HostCheck", () => {
  it("reads names, ports and IPv6 literals; refuses malformed headers", () => {
    expect(hostnameOf("Example.COM.:443")).toBe("example.com");
    expect(hostnameOf("[::1]:80")).toBe("::1");
    expect(hostnameOf("[::1")).toBeUndefined();
    expect(hostnameOf("a:b:c")).toBeUndefined();
  });

  it("* answers any Host; bad names are a TypeError", () => {
    const any = new HostCheck(["*"]);
    expect(any.allows({ headers: { host: "evil.example" } } as never)).toBe(true);
    expect(() => new HostCheck(["bad name"])).toThrow(TypeError);
  });
});

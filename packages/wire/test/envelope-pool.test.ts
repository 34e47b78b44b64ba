/**
 * The envelope memory of large binary messages: reused only after release,
 * bounded while idle, never handed to two sends, and usable as the encoders'
 * allocator. (The transports' use of it is tested in client and server.)
 */
import { describe, expect, it } from "vitest";
import { EnvelopePool, decodeServerMessage, encodeServerMessage } from "../src/index.js";

const KiB = 1024;

describe("EnvelopePool", () => {
  it("reuses an envelope's memory only after it is released, dirty and at the requested length", () => {
    const pool = new EnvelopePool(4 * 1024 * KiB);
    const first = pool.allocate(100 * KiB);
    expect(first.length).toBe(100 * KiB);
    first.fill(7);
    const second = pool.allocate(100 * KiB);
    expect(second.buffer).not.toBe(first.buffer);
    pool.release(first);
    const third = pool.allocate(90 * KiB);
    expect(third.buffer).toBe(first.buffer);
    expect(third.length).toBe(90 * KiB);
    expect(third[0]).toBe(7);
  });

  it("hands out the smallest idle buffer that fits, and a new one when none does", () => {
    const pool = new EnvelopePool(8 * 1024 * KiB);
    const big = pool.allocate(1024 * KiB);
    const small = pool.allocate(100 * KiB);
    pool.release(big);
    pool.release(small);
    expect(pool.allocate(70 * KiB).buffer).toBe(small.buffer);
    expect(pool.allocate(70 * KiB).buffer).toBe(big.buffer);
    const fresh = pool.allocate(2048 * KiB);
    expect([big.buffer, small.buffer]).not.toContain(fresh.buffer);
  });

  it("keeps at most maxIdleBytes idle, and forgets what it drops", () => {
    const pool = new EnvelopePool(1536 * KiB);
    const a = pool.allocate(1024 * KiB);
    const b = pool.allocate(1024 * KiB);
    pool.release(a);
    pool.release(b);
    expect(pool.idleBytes).toBe(1024 * KiB);
    expect(pool.owns(b)).toBe(false);
  });

  it("does not pool small envelopes, foreign memory, a second release, or anything with a bound of 0", () => {
    const pool = new EnvelopePool(4 * 1024 * KiB);
    const small = pool.allocate(1000);
    expect(pool.owns(small)).toBe(false);
    pool.release(small);
    pool.release(new Uint8Array(128 * KiB));
    expect(pool.idleBytes).toBe(0);
    const big = pool.allocate(128 * KiB);
    pool.release(big);
    pool.release(big);
    expect(pool.idleBytes).toBe(128 * KiB);
    expect(pool.allocate(128 * KiB).buffer).toBe(big.buffer);
    expect(pool.allocate(128 * KiB).buffer).not.toBe(big.buffer);
    const off = new EnvelopePool(0);
    expect(off.owns(off.allocate(1024 * KiB))).toBe(false);
  });

  it.each([-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])("refuses a bound of %s as the caller's bug, internal-error", (bound) => {
    expect(() => new EnvelopePool(bound)).toThrow(expect.objectContaining({ name: "ProtocolError", code: "internal-error" }));
    expect(() => new EnvelopePool(1024 * KiB).allocate(bound)).toThrow(expect.objectContaining({ code: "internal-error" }));
  });

  it("whenWritten gives the callback that returns a pooled envelope, and nothing for other data", () => {
    const pool = new EnvelopePool(4 * 1024 * KiB);
    const envelope = pool.allocate(100 * KiB);
    const written = pool.whenWritten(envelope);
    expect(pool.idleBytes).toBe(0);
    written?.();
    expect(pool.idleBytes).toBeGreaterThanOrEqual(100 * KiB);
    expect(pool.whenWritten("text")).toBeUndefined();
    expect(pool.whenWritten(new Uint8Array(100 * KiB))).toBeUndefined();
    expect(pool.whenWritten(pool.allocate(10))).toBeUndefined();
  });

  it("serves as the encoders' allocator: the message is the view it returns", () => {
    const pool = new EnvelopePool(4 * 1024 * KiB);
    const message = {
      type: "output-binary" as const,
      channel: 2,
      sequence: 7n,
      cursorToken: "c",
      payload: new Uint8Array(100 * KiB).fill(3),
    };
    const first = encodeServerMessage(message, pool.encodeOptions) as Uint8Array;
    expect(pool.owns(first)).toBe(true);
    pool.release(first);
    const again = encodeServerMessage({ ...message, sequence: 8n }, { allocate: pool.allocate }) as Uint8Array;
    expect(again.buffer).toBe(first.buffer);
    const decoded = decodeServerMessage(again, true);
    expect(decoded).toEqual({ ...message, sequence: 8n, payload: expect.any(Uint8Array) });
    // The payload compared as bytes: toEqual walks a typed array element by element (seconds for 100 KiB).
    expect(decoded.type === "output-binary" && Buffer.compare(decoded.payload, message.payload)).toBe(0);
  });
});

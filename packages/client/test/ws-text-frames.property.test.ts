/**
 * The Node transport's own framing of small text messages, read back by
 * `ws`'s receiver as a server reads them (RFC 6455 section 5: masked, final
 * text frames): every message arrives whole and in order whatever the
 * texts, their lengths around the 7-bit and 16-bit length forms, where the
 * bursts are flushed and how two connections' bursts interleave in the
 * shared slab; a region once handed to the socket is never written again;
 * and every frame draws its own masking key.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import * as ws from "ws";
import { BURST_BYTES, MAX_FRAMED_TEXT_CHARS, TextFrameBurst } from "../src/ws-text-frames.js";

/** `ws`'s frame reader: exported by the package, absent from its type definitions. */
interface FrameReader {
  on(event: "message", listener: (data: Buffer, isBinary: boolean) => void): void;
  on(event: "error", listener: (error: Error) => void): void;
  write(chunk: Buffer): void;
}
const { Receiver } = ws as unknown as { Receiver: new (options: { isServer: boolean; maxPayload: number }) => FrameReader };

/** Reads frames as a `ws` server does (masked frames required, text validated as UTF-8); what it refuses fails the test. */
function serverReader(): { readonly feed: (bytes: Uint8Array) => void; readonly messages: string[] } {
  const messages: string[] = [];
  const receiver = new Receiver({ isServer: true, maxPayload: 1 << 20 });
  receiver.on("message", (data: Buffer, isBinary: boolean) => {
    expect(isBinary).toBe(false);
    messages.push(data.toString("utf8"));
  });
  receiver.on("error", (error: Error) => {
    throw error;
  });
  return { feed: (bytes) => receiver.write(Buffer.from(bytes)), messages };
}

/** A burst whose written regions are kept, copied and as views, to read back now and again later. */
function capturedBurst(): { readonly burst: TextFrameBurst; readonly copies: Uint8Array[]; readonly views: Uint8Array[] } {
  const copies: Uint8Array[] = [];
  const views: Uint8Array[] = [];
  const burst = new TextFrameBurst((bytes) => {
    views.push(bytes);
    copies.push(Uint8Array.from(bytes));
  });
  return { burst, copies, views };
}

const readAll = (regions: readonly Uint8Array[]): string[] => {
  const reader = serverReader();
  for (const region of regions) reader.feed(region);
  return reader.messages;
};

/** Texts around the frame's length forms (125/126 bytes), multi-byte characters and surrogate pairs included. */
const text = fc.oneof(
  fc.string({ unit: "binary", maxLength: 200 }),
  fc.string({ unit: "grapheme-ascii", minLength: 120, maxLength: 130 }),
  fc.string({ unit: "binary", minLength: 1000, maxLength: 3000 }),
);

describe("the ws transport's own text frames", () => {
  it("reach a ws server whole and in order, whatever the texts and flush points", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(text, fc.boolean()), { maxLength: 60 }), (steps) => {
        const { burst, copies, views } = capturedBurst();
        for (const [message, flushAfter] of steps) {
          burst.add(message);
          if (flushAfter) burst.flush();
        }
        burst.flush();
        expect(burst.pendingBytes).toBe(0);
        // What ws.send would have sent: the text's UTF-8 (a lone surrogate becomes U+FFFD either way).
        const expected = steps.map(([message]) => Buffer.from(message, "utf8").toString("utf8"));
        expect(readAll(copies)).toEqual(expected);
        // The views handed to the socket still hold the same bytes: nothing framed later overwrote them.
        expect(readAll(views)).toEqual(expected);
      }),
      { numRuns: 200 },
    );
  });

  it("keep each connection's messages to itself when two bursts interleave in the shared slab", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), text, fc.boolean()), { maxLength: 80 }), (steps) => {
        const a = capturedBurst();
        const b = capturedBurst();
        const sent: [string[], string[]] = [[], []];
        for (const [toB, message, flushAfter] of steps) {
          const burst = toB ? b.burst : a.burst;
          burst.add(message);
          sent[toB ? 1 : 0].push(Buffer.from(message, "utf8").toString("utf8"));
          if (flushAfter) burst.flush();
        }
        a.burst.flush();
        b.burst.flush();
        expect(readAll(a.views)).toEqual(sent[0]);
        expect(readAll(b.views)).toEqual(sent[1]);
      }),
      { numRuns: 200 },
    );
  });

  it("write a long burst in regions of at most a slab, and the largest text it takes in one frame", () => {
    const { burst, views } = capturedBurst();
    const largest = "€".repeat(MAX_FRAMED_TEXT_CHARS); // 3 bytes each: the 16-bit length's largest case here
    const small = Array.from({ length: 2_000 }, (_, i) => `{"item":${i},"text":"${"x".repeat(100)}"}`);
    for (const message of small) burst.add(message);
    burst.add(largest);
    burst.flush();
    expect(views.length).toBeGreaterThan(1);
    for (const region of views) expect(region.length).toBeLessThanOrEqual(BURST_BYTES);
    expect(readAll(views)).toEqual([...small, largest]);
    expect(TextFrameBurst.fits(largest)).toBe(true);
    expect(TextFrameBurst.fits(largest + "x")).toBe(false);
    expect(() => burst.add(largest + "x")).toThrow(RangeError);
  });

  it("draw a masking key for every frame, so the same text is sent as different bytes", () => {
    const { burst, copies } = capturedBurst();
    const frames = 3_000; // more than one pool of keys
    for (let i = 0; i < frames; i++) {
      burst.add("same");
      burst.flush();
    }
    const keys = new Set(copies.map((frame) => Buffer.from(frame.subarray(2, 6)).toString("hex")));
    // 3 000 draws of 32 random bits: a repeat is a one-in-a-thousand event; the same key for all is the bug.
    expect(keys.size).toBeGreaterThan(frames - 5);
    expect(copies.every((frame) => frame[0] === 0x81 && frame[1] === (0x80 | 4))).toBe(true);
    expect(readAll(copies)).toEqual(Array.from({ length: frames }, () => "same"));
  });

  it("drop what waits when told to, and write nothing for an empty flush", () => {
    const { burst, views } = capturedBurst();
    burst.flush();
    burst.add("dropped");
    expect(burst.pendingBytes).toBe(2 + 4 + "dropped".length);
    burst.discard();
    burst.flush();
    burst.add("kept");
    burst.flush();
    expect(readAll(views)).toEqual(["kept"]);
  });
});

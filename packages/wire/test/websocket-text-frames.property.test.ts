/**
 * Text frames of a burst, read back by `ws`'s receiver as the other side
 * reads them (RFC 6455 section 5: a server requires masked frames, a client
 * unmasked ones): every message arrives whole and in order whatever the
 * texts, their lengths around the 7-bit and 16-bit length forms, where the
 * bursts are flushed and how two connections' bursts interleave in the
 * shared slab; a region once handed to the socket is never written again;
 * and every masked frame draws its own key.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import * as ws from "ws";
import { FRAME_SLAB_BYTES, MAX_FRAMED_TEXT_CHARS, TextFrameBurst } from "../src/websocket-text-frames.js";

/** `ws`'s frame reader: exported by the package, absent from its type definitions. */
interface FrameReader {
  on(event: "message", listener: (data: Buffer, isBinary: boolean) => void): void;
  on(event: "error", listener: (error: Error) => void): void;
  write(chunk: Buffer): void;
}
const { Receiver } = ws as unknown as { Receiver: new (options: { isServer: boolean; maxPayload: number }) => FrameReader };

/** Reads frames as `ws` does at the other end (a server requires masked frames, a client unmasked ones; text validated as UTF-8); what it refuses fails the test. */
function reader(masked: boolean): { readonly feed: (bytes: Uint8Array) => void; readonly messages: string[] } {
  const messages: string[] = [];
  const receiver = new Receiver({ isServer: masked, maxPayload: 1 << 20 });
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
function capturedBurst(masked: boolean): { readonly burst: TextFrameBurst; readonly copies: Uint8Array[]; readonly views: Uint8Array[] } {
  const copies: Uint8Array[] = [];
  const views: Uint8Array[] = [];
  const burst = new TextFrameBurst(
    (bytes) => {
      views.push(bytes);
      copies.push(Uint8Array.from(bytes));
    },
    { masked },
  );
  return { burst, copies, views };
}

const readAll = (regions: readonly Uint8Array[], masked: boolean): string[] => {
  const other = reader(masked);
  for (const region of regions) other.feed(region);
  return other.messages;
};

/** Texts around the frame's length forms (125/126 bytes), multi-byte characters and surrogate pairs included. */
const text = fc.oneof(
  fc.string({ unit: "binary", maxLength: 200 }),
  fc.string({ unit: "grapheme-ascii", minLength: 120, maxLength: 130 }),
  fc.string({ unit: "binary", minLength: 1000, maxLength: 3000 }),
);

const utf8 = (message: string): string => Buffer.from(message, "utf8").toString("utf8");

describe.each([
  ["masked, as a client sends them", true],
  ["unmasked, as a server sends them", false],
])("text frames %s", (_, masked) => {
  it("reach the other end whole and in order, whatever the texts and flush points", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(text, fc.boolean()), { maxLength: 60 }), (steps) => {
        const { burst, copies, views } = capturedBurst(masked);
        for (const [message, flushAfter] of steps) {
          burst.add(message);
          if (flushAfter) burst.flush();
        }
        burst.flush();
        expect(burst.pendingBytes).toBe(0);
        // What ws.send would have sent: the text's UTF-8 (a lone surrogate becomes U+FFFD either way).
        const expected = steps.map(([message]) => utf8(message));
        expect(readAll(copies, masked)).toEqual(expected);
        // The views handed to the socket still hold the same bytes: nothing framed later overwrote them.
        expect(readAll(views, masked)).toEqual(expected);
      }),
      { numRuns: 200 },
    );
  });

  it("write a long burst in regions of at most a slab, and the largest text it takes in one frame", () => {
    const { burst, views } = capturedBurst(masked);
    const largest = "€".repeat(MAX_FRAMED_TEXT_CHARS); // 3 bytes each: the 16-bit length's largest case here
    const small = Array.from({ length: 2_000 }, (_, i) => `{"item":${i},"text":"${"x".repeat(100)}"}`);
    for (const message of small) burst.add(message);
    burst.add(largest);
    burst.flush();
    expect(views.length).toBeGreaterThan(1);
    for (const region of views) expect(region.length).toBeLessThanOrEqual(FRAME_SLAB_BYTES);
    expect(readAll(views, masked)).toEqual([...small, largest]);
    expect(TextFrameBurst.fits(largest)).toBe(true);
    expect(TextFrameBurst.fits(largest + "x")).toBe(false);
    expect(() => burst.add(largest + "x")).toThrow(RangeError);
  });

  it("drop what waits when told to, and write nothing for an empty flush", () => {
    const { burst, views } = capturedBurst(masked);
    burst.flush();
    burst.add("dropped");
    expect(burst.pendingBytes).toBe(2 + (masked ? 4 : 0) + "dropped".length);
    burst.discard();
    burst.flush();
    burst.add("kept");
    burst.flush();
    expect(readAll(views, masked)).toEqual(["kept"]);
  });
});

describe("text frames of several connections", () => {
  it("keep each connection's messages to itself when bursts, masked and not, interleave in the shared slab", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), text, fc.boolean()), { maxLength: 80 }), (steps) => {
        const client = capturedBurst(true);
        const server = capturedBurst(false);
        const sent: [string[], string[]] = [[], []];
        for (const [byServer, message, flushAfter] of steps) {
          const burst = byServer ? server.burst : client.burst;
          burst.add(message);
          sent[byServer ? 1 : 0].push(utf8(message));
          if (flushAfter) burst.flush();
        }
        client.burst.flush();
        server.burst.flush();
        expect(readAll(client.views, true)).toEqual(sent[0]);
        expect(readAll(server.views, false)).toEqual(sent[1]);
      }),
      { numRuns: 200 },
    );
  });
});

describe("a scheduled burst", () => {
  it("is written by one task per burst while the socket is open, and dropped once it is not", () => {
    const tasks: (() => void)[] = [];
    let open = true;
    const written: Uint8Array[] = [];
    const burst = new TextFrameBurst((bytes) => written.push(bytes), {
      masked: true,
      schedule: (task) => tasks.push(task),
      open: () => open,
    });
    burst.add("one");
    burst.add("two");
    expect(tasks).toHaveLength(1);
    tasks.shift()!();
    expect(readAll(written, true)).toEqual(["one", "two"]);
    burst.add("three");
    expect(tasks).toHaveLength(1);
    open = false;
    tasks.shift()!();
    expect(burst.pendingBytes).toBe(0);
    burst.flush();
    expect(readAll(written, true)).toEqual(["one", "two"]);
  });
});

describe("a backlogged socket", () => {
  it("is handed copies of its own size, so the regions it queues hold no slab; a socket with nothing queued gets views", () => {
    let backlogged = false;
    const written: Uint8Array[] = [];
    const burst = new TextFrameBurst((bytes) => written.push(bytes), { masked: false, backlogged: () => backlogged });
    const other = new TextFrameBurst(() => undefined, { masked: false });
    const sent: string[] = [];
    for (let i = 0; i < 1_000; i++) {
      backlogged = i % 2 === 1;
      const message = `output ${i}`;
      burst.add(message);
      sent.push(message);
      // Another connection fills the slab between this one's bursts, as busy neighbours do.
      other.add("x".repeat(300));
      burst.flush();
      other.flush();
    }
    written.forEach((region, i) => {
      const isCopy = region.byteOffset === 0 && region.buffer.byteLength === region.length;
      expect(isCopy).toBe(i % 2 === 1);
      if (!isCopy) expect(region.buffer.byteLength).toBe(FRAME_SLAB_BYTES);
    });
    expect(readAll(written, false)).toEqual(sent);
  });
});

describe("masking keys", () => {
  it("are drawn for every masked frame, so the same text is sent as different bytes", () => {
    const { burst, copies } = capturedBurst(true);
    const frames = 3_000; // more than one pool of keys
    for (let i = 0; i < frames; i++) {
      burst.add("same");
      burst.flush();
    }
    const keys = new Set(copies.map((frame) => Buffer.from(frame.subarray(2, 6)).toString("hex")));
    // 3 000 draws of 32 random bits: a repeat is a one-in-a-thousand event; the same key for all is the bug.
    expect(keys.size).toBeGreaterThan(frames - 5);
    expect(copies.every((frame) => frame[0] === 0x81 && frame[1] === (0x80 | 4))).toBe(true);
    expect(readAll(copies, true)).toEqual(Array.from({ length: frames }, () => "same"));
  });

  it("are absent from a server's frames: the header, then the text's own bytes", () => {
    const { burst, copies } = capturedBurst(false);
    burst.add("same");
    burst.add("€".repeat(50)); // 150 bytes: the 16-bit length, found only once the text is encoded
    burst.flush();
    expect([...copies[0]!]).toEqual([0x81, 4, ...Buffer.from("same"), 0x81, 126, 0, 150, ...Buffer.from("€".repeat(50))]);
  });
});

/** Unit tests of the in-memory building blocks: byte permits, channel table, input queue, limits, HTTP envelope. */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import type { IncomingMessage } from "node:http";
import { ProtocolError, LIMITS } from "@golem-stream/wire";
import { DEFAULT_LIMITS, InputCancelledError, resolveLimits } from "../src/index.js";
import { BytePermits } from "../src/invocation/byte-permits.js";
import { ChannelTable } from "../src/attachment/channel-table.js";
import { NodeBudget } from "../src/invocation/node-budget.js";
import { InputQueue } from "../src/invocation/input-queue.js";
import { bearerToken, errorEnvelope, offeredSubprotocols, offersSubprotocol } from "../src/transport/http-handshake.js";

const WRONG_TYPES: readonly unknown[] = [undefined, null, -1, 1.5, Number.NaN, Infinity, "1", 1n, {}, [], () => 1];

describe("BytePermits", () => {
  it("never lets held bytes exceed capacity, and serves waiters in FIFO order", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 0, max: 100 }), { minLength: 1, maxLength: 40 }), async (sizes) => {
        const permits = new BytePermits(100);
        const served: number[] = [];
        const pending = sizes.map((size, index) =>
          permits.acquire(size).then(() => {
            served.push(index);
            expect(permits.held).toBeLessThanOrEqual(100);
          }),
        );
        // Release in service order until everyone was served.
        for (let released = 0; released < sizes.length; released++) {
          await Promise.resolve();
          while (served.length <= released) await new Promise((resolve) => setImmediate(resolve));
          permits.release(sizes[served[released]!]!);
        }
        await Promise.all(pending);
        expect(served).toEqual(sizes.map((_, i) => i));
        expect(permits.held).toBe(0);
      }),
      { numRuns: 50 },
    );
  });

  it("a waiter whose signal aborts leaves the queue holding nothing, and the one behind it is served", async () => {
    const permits = new BytePermits(10);
    expect(await permits.acquire(8)).toBe(true);
    const closing = new AbortController();
    const abandoned = permits.acquire(6, closing.signal);
    let servedSmall = false;
    const small = permits.acquire(2).then((held) => (servedSmall = held));
    await Promise.resolve();
    expect(servedSmall).toBe(false); // FIFO: behind the waiter for 6
    closing.abort();
    expect(await abandoned).toBe(false);
    await small;
    expect(servedSmall).toBe(true);
    expect(permits.held).toBe(10);
    expect(permits.waiting).toBe(0);
    // An already aborted signal does not queue at all.
    expect(await permits.acquire(1, closing.signal)).toBe(false);
    expect(permits.waiting).toBe(0);
  });

  it("a request larger than the whole budget is limit-exceeded, not a deadlock", () => {
    const permits = new BytePermits(10);
    expect(() => permits.tryAcquire(11)).toThrow(ProtocolError);
    expect(() => permits.tryAcquire(11)).toThrow(expect.objectContaining({ code: "limit-exceeded" }));
  });

  it("rejects wrong-typed sizes and over-release", () => {
    const permits = new BytePermits(10);
    for (const wrong of WRONG_TYPES) {
      if (wrong === undefined) continue;
      expect(() => permits.tryAcquire(wrong as number)).toThrow();
      expect(() => new BytePermits(wrong as number)).toThrow(RangeError);
    }
    expect(() => permits.release(1)).toThrow(RangeError);
  });
});

describe("NodeBudget", () => {
  it("counts everything the sessions' permits hold in memory, waiters included once they are served, unsent output (uncounted) not", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            session: fc.integer({ min: 0, max: 2 }),
            op: fc.constantFrom("acquire", "charge", "release", "chargeUncounted", "releaseUncounted"),
            bytes: fc.integer({ min: 0, max: 60 }),
          }),
          { maxLength: 60 },
        ),
        async (steps) => {
          const node = new NodeBudget(100);
          const sessions = [0, 1, 2].map(() => new BytePermits(50, node));
          const uncounted = [0, 0, 0];
          for (const { session, op, bytes } of steps) {
            const permits = sessions[session]!;
            const size = Math.min(bytes, 50);
            if (op === "charge") permits.charge(size);
            else if (op === "acquire") void permits.acquire(size);
            else if (op === "chargeUncounted") {
              permits.chargeUncounted(size);
              uncounted[session]! += size;
            } else if (op === "releaseUncounted") {
              const back = Math.min(size, uncounted[session]!);
              permits.releaseUncounted(back);
              uncounted[session]! -= back;
            } else permits.release(Math.min(size, permits.countedHeld));
            await Promise.resolve();
            expect(node.held).toBe(sessions.reduce((sum, p) => sum + p.countedHeld, 0));
            sessions.forEach((p, i) => expect(p.held).toBe(p.countedHeld + uncounted[i]!));
          }
        },
      ),
    );
  });

  it("a session's permits tell their listeners once when what the node counts of them is back to zero", () => {
    const permits = new BytePermits(50, new NodeBudget(100));
    const drained: string[] = [];
    permits.charge(10);
    permits.chargeUncounted(20); // unsent output: not waited for
    permits.onceDrained(() => drained.push("a"));
    permits.release(4);
    expect(drained).toEqual([]);
    permits.release(6);
    expect(drained).toEqual(["a"]);
    permits.onceDrained(() => drained.push("now")); // nothing counted: at once
    expect(drained).toEqual(["a", "now"]);
    expect(() => permits.release(1)).toThrow(RangeError);
    expect(() => permits.releaseUncounted(21)).toThrow(RangeError);
    expect(permits.held).toBe(20); // a refused release changes nothing
  });

  it("tells its listeners once when it stops being spent, never while it still is", () => {
    const node = new NodeBudget(10);
    const relieved: string[] = [];
    node.charge(12);
    expect(node.spent).toBe(true);
    node.onceRelieved(() => relieved.push("a"));
    node.onceRelieved(() => relieved.push("b"));
    node.release(1); // 11: still spent
    expect(relieved).toEqual([]);
    node.release(2); // 9
    expect(relieved).toEqual(["a", "b"]);
    node.charge(5);
    node.release(5);
    expect(relieved).toEqual(["a", "b"]);
    expect(() => node.release(10)).toThrow(RangeError);
    expect(() => new NodeBudget(0)).toThrow(RangeError);
  });
});

describe("ChannelTable", () => {
  it("assigns 1, 2, 3 … across both directions and never reuses a number", () => {
    const table = new ChannelTable();
    expect(table.assign("a", "input").channel).toBe(1);
    expect(table.assign("b", "output").channel).toBe(2);
    expect(table.assign("a", "input").channel).toBe(1);
    table.close("a");
    expect(table.assign("c", "input").channel).toBe(3);
  });

  it("tells every invalid use apart, all as invalid-channel", () => {
    const table = new ChannelTable();
    table.assign("in", "input");
    const cases: [number, "input" | "output", RegExp][] = [
      [9, "input", /unknown/],
      [1, "input", /before its mapping/],
    ];
    for (const [channel, direction, message] of cases) {
      expect(() => table.require(channel, direction, "x")).toThrow(message);
    }
    table.announce("in");
    expect(table.require(1, "input", "x").streamId).toBe("in");
    expect(() => table.require(1, "output", "x")).toThrow(/other direction/);
    table.close("in");
    expect(() => table.require(1, "input", "x")).toThrow(/has ended/);
    expect(table.require(1, "input", "x", true).state).toBe("closed");
    try {
      table.require(0, "input", "x");
    } catch (error) {
      expect(error).toMatchObject({ code: "invalid-channel", retryable: true });
    }
  });
});

describe("InputQueue", () => {
  it("holds at most `capacity` entries; space opens as the consumer reads; permits follow entries", async () => {
    const permits = new BytePermits(1000);
    const queue = new InputQueue<number>(2, permits, () => undefined);
    for (const item of [1, 2]) {
      await permits.acquire(10);
      queue.push(item, 10);
    }
    let spaced = false;
    const space = queue.waitForSpace().then(() => (spaced = true));
    await Promise.resolve();
    expect(spaced).toBe(false);
    const iterator = queue.consume()[Symbol.asyncIterator]();
    expect(await iterator.next()).toEqual({ value: 1, done: false });
    await space;
    expect(permits.held).toBe(10);
    queue.end();
    expect(await iterator.next()).toEqual({ value: 2, done: false });
    expect(await iterator.next()).toEqual({ value: undefined, done: true });
    expect(permits.held).toBe(0);
  });

  it("cancel drops queued entries, releases their permits and fails the reader", async () => {
    const permits = new BytePermits(100);
    const queue = new InputQueue<string>(10, permits, () => undefined);
    await permits.acquire(30);
    queue.push("x", 30);
    queue.cancel("source-unavailable");
    expect(permits.held).toBe(0);
    await expect(queue.consume()[Symbol.asyncIterator]().next()).rejects.toBeInstanceOf(InputCancelledError);
  });

  it("a reader that stops early reports a consumer drop once; a queue is read once", async () => {
    const permits = new BytePermits(100);
    let drops = 0;
    const queue = new InputQueue<string>(10, permits, () => drops++);
    queue.push("a", 0);
    queue.push("b", 0);
    for await (const item of queue.consume()) {
      expect(item).toBe("a");
      break;
    }
    expect(drops).toBe(1);
    expect(queue.closed).toBe(true);
    expect(() => queue.consume()).toThrow();
  });
});

describe("resolveLimits", () => {
  it("defaults to the protocol's limits and clamps larger values down", () => {
    expect(resolveLimits()).toEqual(DEFAULT_LIMITS);
    expect(resolveLimits({ maxQueuedEntriesPerStream: 10_000 }).maxQueuedEntriesPerStream).toBe(LIMITS.maxQueuedEntriesPerStream);
    expect(resolveLimits({ maxQueuedEntriesPerStream: 8 }).maxQueuedEntriesPerStream).toBe(8);
  });

  it("rejects unknown names and wrong-typed values", () => {
    expect(() => resolveLimits({ bogus: 1 } as never)).toThrow(TypeError);
    for (const wrong of WRONG_TYPES) {
      if (wrong === undefined) continue;
      expect(() => resolveLimits({ sessionRetentionMs: wrong as number })).toThrow(TypeError);
    }
  });

  it("keeps the node's byte budget at least one session's", () => {
    expect(DEFAULT_LIMITS.maxQueuedBytesPerNode).toBe(256 * 1024 * 1024);
    expect(resolveLimits({ maxQueuedBytesPerSession: 1024, maxQueuedBytesPerNode: 1024 }).maxQueuedBytesPerNode).toBe(1024);
    expect(() => resolveLimits({ maxQueuedBytesPerSession: 2048, maxQueuedBytesPerNode: 1024 })).toThrow(/maxQueuedBytesPerNode/);
  });
});

describe("HTTP handshake helpers", () => {
  const request = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;

  it("writes Golem's envelope: errors[] on 400, error otherwise", () => {
    expect(errorEnvelope("unsupported-subprotocol", "m")).toEqual({
      status: 400,
      body: '{"code":"unsupported-subprotocol","errors":["m"]}',
    });
    expect(errorEnvelope("unauthenticated", "m")).toEqual({ status: 401, body: '{"code":"unauthenticated","error":"m"}' });
    expect(errorEnvelope("not-a-websocket", "m").status).toBe(426);
  });

  it("parses bearer tokens strictly (the scheme is case-insensitive, RFC 9110 section 11.1: 1*SP before the token)", () => {
    const table: [string | undefined, string | undefined][] = [
      ["Bearer abc", "abc"],
      ["bearer abc", "abc"],
      ["BEARER abc", "abc"],
      ["Bearer  abc", "abc"],
      ["Bearer\tabc", undefined],
      ["Bearerabc", undefined],
      [" Bearer abc", undefined],
      ["Bearer abc def", undefined],
      ["Basic abc", undefined],
      ["Bearer ", undefined],
      [`Bearer ${"a".repeat(20_000)}`, undefined],
      [undefined, undefined],
    ];
    for (const [header, expected] of table) {
      expect(bearerToken(request(header === undefined ? {} : { authorization: header }))).toBe(expected);
    }
  });

  it("finds the subprotocol in a list", () => {
    expect(offersSubprotocol(request({ "sec-websocket-protocol": "a, golem.agent-invocation.v1" }))).toBe(true);
    expect(offersSubprotocol(request({ "sec-websocket-protocol": "golem.agent-invocation.v2" }))).toBe(false);
    expect(offersSubprotocol(request({}))).toBe(false);
  });

  it("reads the subprotocol list with the grammar ws enforces (1#token), refusing what ws would refuse", () => {
    const p = "golem.agent-invocation.v1";
    const table: [string, string[] | undefined][] = [
      [p, [p]],
      [`a ,\t${p}`, ["a", p]],
      [`a,,${p}`, undefined],
      [`,${p}`, undefined],
      [`${p},`, undefined],
      [`a b,${p}`, undefined],
      [`${p}, ${p}`, undefined],
      [`"${p}"`, undefined],
      [`${p};q=1`, undefined],
      ["", undefined],
    ];
    for (const [header, expected] of table) {
      const offered = offeredSubprotocols(request({ "sec-websocket-protocol": header }));
      expect(offered === undefined ? undefined : [...offered]).toEqual(expected);
    }
  });
});

describe("entry points refuse wrong-typed options", () => {
  it("createSessionServer and startEmbeddedServer name the bad option", async () => {
    const { createSessionServer, startEmbeddedServer } = await import("../src/index.js");
    for (const wrong of WRONG_TYPES) {
      expect(() => createSessionServer(wrong as never)).toThrow(TypeError);
      if (typeof wrong !== "function")
        expect(() => createSessionServer({ store: {}, host: {}, keyring: {}, authenticator: wrong } as never)).toThrow(/authenticator/);
      if (typeof wrong !== "string")
        await expect(startEmbeddedServer({ dataDir: wrong, tokens: ["t"] } as never)).rejects.toThrow(/dataDir/);
      await expect(startEmbeddedServer({ dataDir: "/tmp/x", tokens: wrong } as never)).rejects.toThrow(/tokens/);
    }
    await expect(startEmbeddedServer({ dataDir: "", tokens: ["t"] })).rejects.toThrow(/dataDir/);
    await expect(startEmbeddedServer({ dataDir: "/tmp/x", tokens: [] })).rejects.toThrow(/tokens/);
    await expect(startEmbeddedServer({ dataDir: "/tmp/x", tokens: [""] })).rejects.toThrow(/tokens/);
  });
});

describe("recordField / payloadOf", () => {
  it("navigate validated values and return undefined for anything else", async () => {
    const { recordField, payloadOf } = await import("../src/index.js");
    const value = { kind: "record", value: { fields: [{ kind: "u32", value: 7 }] } };
    expect(recordField(value, 0)).toEqual({ kind: "u32", value: 7 });
    expect(payloadOf(recordField(value, 0))).toBe(7);
    expect(recordField(value, 1)).toBeUndefined();
    for (const wrong of WRONG_TYPES) expect(recordField(wrong as never, 0)).toBeUndefined();
    expect(recordField({ kind: "list", value: { fields: [] } }, 0)).toBeUndefined();
  });
});

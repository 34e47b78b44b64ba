/**
 * The output pumps' tail of just-committed events (committed-tail.ts): a
 * cache of the log that must never answer anything but the log's own
 * events from the pump's position, and a pump that keeps up must use it.
 */
import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CommittedTail, TAIL_EVENTS, TailAllowance } from "../src/attachment/committed-tail.js";
import { MemorySessionStore } from "../src/index.js";
import { type OutputEvent } from "../src/store/index.js";
import { RawClient, demoStart, outputValues, startTestServer, v } from "./helpers.js";

const item = (sequence: number, size: number): OutputEvent => ({
  event: "item",
  streamId: "s",
  sequence: BigInt(sequence),
  itemCount: 1n,
  data: new Uint8Array(size),
  mimeType: undefined,
});

describe("CommittedTail", () => {
  it("answers from the pump's position with the held run, and drops what was sent", () => {
    const tail = new CommittedTail(new TailAllowance(1024));
    for (let i = 0; i < 5; i++) tail.offer(item(i, 10), 0n);
    expect(tail.take(0n, 2)?.map((e) => e.sequence)).toEqual([0n, 1n]);
    // The pump read 2..3 from elsewhere meanwhile: those are dropped, 4 is next.
    expect(tail.take(4n, 64)?.map((e) => e.sequence)).toEqual([4n]);
    expect(tail.size).toBe(0);
    expect(tail.take(5n, 64)).toBeUndefined();
  });

  it("does not answer for a position before the run it holds (the store does)", () => {
    const tail = new CommittedTail(new TailAllowance(1024));
    tail.offer(item(7, 1), 3n);
    expect(tail.take(3n, 64)).toBeUndefined();
    expect(tail.take(7n, 64)?.map((e) => e.sequence)).toEqual([7n]);
  });

  it("a gap, an event past the count bound or past the byte allowance empties it; the allowance comes back", () => {
    const allowance = new TailAllowance(100);
    const tail = new CommittedTail(allowance);
    tail.offer(item(0, 40), 0n);
    tail.offer(item(2, 40), 0n); // 1 is missing: the run restarts at 2
    expect(tail.take(0n, 64)).toBeUndefined();
    expect(tail.take(2n, 64)?.map((e) => e.sequence)).toEqual([2n]);
    tail.offer(item(3, 60), 0n);
    tail.offer(item(4, 60), 0n); // 120 > 100: emptied, never a run with a hole
    expect(tail.size).toBe(0);
    expect(allowance.take(100)).toBe(true);
    allowance.give(100);
    for (let i = 0; i <= TAIL_EVENTS; i++) tail.offer(item(10 + i, 0), 0n);
    expect(tail.size).toBe(0);
  });

  it("over generated commits, gaps and takes, whatever it answers is the log from the position on", () => {
    const step = fc.oneof(
      fc.record({ op: fc.constant("commit" as const), size: fc.integer({ min: 0, max: 300 }), skip: fc.boolean() }),
      fc.record({ op: fc.constant("take" as const), limit: fc.integer({ min: 1, max: 70 }), fromStore: fc.integer({ min: 0, max: 5 }) }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 300 }), fc.integer({ min: 0, max: 4000 }), (steps, bytes) => {
        const allowance = new TailAllowance(bytes);
        const tail = new CommittedTail(allowance);
        const log: OutputEvent[] = [];
        let next = 0n;
        for (const s of steps) {
          if (s.op === "commit") {
            const event = item(log.length, s.size);
            log.push(event);
            // A commit the attachment was not told of (another path): the tail must not bridge it.
            if (!s.skip) tail.offer(event, next);
          } else {
            const answer = tail.take(next, s.limit);
            if (answer === undefined) {
              // The pump reads the store instead.
              const read = log.slice(Number(next), Number(next) + s.fromStore);
              next += BigInt(read.length);
              continue;
            }
            expect(answer.length).toBeGreaterThan(0);
            expect(answer.length).toBeLessThanOrEqual(s.limit);
            answer.forEach((event, i) => expect(event).toBe(log[Number(next) + i]));
            next += BigInt(answer.length);
          }
        }
        tail.clear();
        // Everything taken from the allowance came back.
        expect(allowance.take(bytes)).toBe(true);
        expect(allowance.take(1)).toBe(false);
      }),
    );
  });
});

/** The in-memory store, counting the pumps' reads. */
class ReadCountingStore extends MemorySessionStore {
  reads = 0;
  override readOutput(streamId: string, from: bigint, limit: number, maxBytes?: number): Promise<OutputEvent[]> {
    this.reads++;
    return super.readOutput(streamId, from, limit, maxBytes);
  }
}

describe("output pumps and the tail", () => {
  it("a client that keeps up gets `reverse`'s items without a store read per item, all of them, in order", async () => {
    const store = new ReadCountingStore();
    const server = await startTestServer({ store });
    try {
      const client = await RawClient.connect(server.url);
      client.send(demoStart("reverse", v.record(v.stream(randomUUID()))));
      const accepted = await client.nextOf("invocationAccepted");
      const result = await client.nextOf("invocationResult");
      const input = accepted.mappings[0]!.channel;
      const items = 300;
      for (let i = 0; i < items; i++)
        client.send({ type: "inputStreamItem", channel: input, sequence: BigInt(i), value: v.str(`item ${i}`) });
      client.send({ type: "inputStreamEnd", channel: input, sequence: BigInt(items) });
      const { messages } = await client.all();
      const values = outputValues(messages, result.mappings[0]!.channel);
      expect(values.map((value) => (value.kind === "string" ? value.value : ""))).toEqual(
        Array.from({ length: items }, (_, i) => Array.from(`item ${i}`).reverse().join("")),
      );
      expect(messages.at(-1)?.type).toBe("invocationFinished");
      // Without the tail every commit's events were read back: about one read per item.
      expect(store.reads).toBeLessThan(items / 4);
    } finally {
      await server.dispose();
    }
  });
});

/**
 * Property: with arbitrary source chunking, partial acknowledgements and
 * reconnects, the server (modelled as a durable high-water plus bytes) never
 * sees a gap, accepts every byte exactly once, and the feeder never holds more
 * unacknowledged bytes than its bound plus one source chunk.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ClientMessage } from "@golem-stream/wire";
import { InputFeeder, type FeederHost } from "../src/input-feeder.js";
import { inputStream } from "../src/input-stream.js";

const host: FeederHost = { freezeValue: () => ({ kind: "bool", value: true }), onSourceFailure: () => undefined };
/** Freezes a string item as the client does: a string node. */
const stringHost: FeederHost = { ...host, freezeValue: (_binding, item) => ({ kind: "string", value: item as string }) };
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe("input feeder resend", () => {
  it("resends exactly the suffix beyond the high-water, never a gap", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.uint8Array({ minLength: 1, maxLength: 50 }), { minLength: 1, maxLength: 30 }),
        fc.array(fc.record({ ackFraction: fc.double({ min: 0, max: 1, noNaN: true }), reconnect: fc.boolean() }), {
          minLength: 1,
          maxLength: 20,
        }),
        fc.integer({ min: 8, max: 200 }),
        async (chunks, steps, bound) => {
          const durable: number[] = [];
          let ended = false;
          let inFlight: ClientMessage[] = [];
          let maxUnacked = 0;
          let acked = 0;
          const feeder = new InputFeeder(inputStream.bytes(chunks), "ref", host, bound);
          const link = { channel: 1, send: (m: ClientMessage) => void inFlight.push(m) };
          /** The server takes what arrived, in order; anything beyond its high-water is a gap. */
          const receive = (): void => {
            for (const message of inFlight) {
              if (message.type === "input-u8") {
                const at = Number(message.sequence);
                expect(at).toBeLessThanOrEqual(durable.length); // input-gap otherwise
                durable.push(...message.payload.subarray(durable.length - at));
              } else if (message.type === "inputStreamEnd") {
                expect(Number(message.sequence)).toBe(durable.length);
                ended = true;
              }
            }
            inFlight = [];
          };
          feeder.attach(link, { sequence: 0n, terminal: false });
          for (const step of steps) {
            await settle();
            maxUnacked = Math.max(maxUnacked, feeder.unackedBytes);
            if (step.reconnect) {
              // The connection dies: in-flight messages are lost, the server keeps its durable part.
              inFlight = [];
              feeder.detach();
              acked = durable.length;
              feeder.attach(link, { sequence: BigInt(acked), terminal: ended });
            } else {
              receive();
              // Acknowledgements are cumulative: they never go back.
              acked = Math.max(acked, Math.floor(durable.length * step.ackFraction));
              feeder.acknowledge(BigInt(acked), false);
            }
          }
          for (let i = 0; i < 200 && !ended; i++) {
            await settle();
            receive();
            feeder.acknowledge(BigInt(durable.length), ended);
          }
          if (ended) feeder.acknowledge(BigInt(durable.length), true);
          expect(ended).toBe(true);
          expect(Uint8Array.from(durable)).toEqual(Uint8Array.from(chunks.flatMap((c) => [...c])));
          // Past the bound by one entry at most: its payload (50 bytes at most here) and the 64 bytes an entry is charged.
          expect(maxUnacked).toBeLessThanOrEqual(bound + 50 + 64);
          expect(feeder.done).toBe(true);
        },
      ),
      { numRuns: 150 },
    );
  });

  it("drops exactly the acknowledged items of a value stream and resends the rest in order", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.string({ maxLength: 12 }), { minLength: 1, maxLength: 60 }),
        fc.array(
          fc.record({
            ackFraction: fc.double({ min: 0, max: 1, noNaN: true }),
            reconnect: fc.boolean(),
            // Of what the server received and had not acknowledged, how much was durable when the connection died.
            keptFraction: fc.double({ min: 0, max: 1, noNaN: true }),
          }),
          {
            minLength: 1,
            maxLength: 20,
          },
        ),
        fc.integer({ min: 64, max: 2000 }),
        async (items, steps, bound) => {
          const durable: string[] = [];
          let ended = false;
          let inFlight: ClientMessage[] = [];
          let acked = 0;
          const feeder = new InputFeeder(inputStream.strings(items), "ref", stringHost, bound);
          const link = { channel: 1, send: (m: ClientMessage) => void inFlight.push(m) };
          /** Each item must come exactly at the server's high-water: an item dropped unacknowledged leaves a gap, one kept after its acknowledgement comes twice. */
          const receive = (): void => {
            for (const message of inFlight) {
              if (message.type === "inputStreamItem") {
                expect(Number(message.sequence)).toBe(durable.length);
                durable.push((message.value as { value: string }).value);
              } else if (message.type === "inputStreamEnd") {
                expect(Number(message.sequence)).toBe(durable.length);
                ended = true;
              }
            }
            inFlight = [];
          };
          feeder.attach(link, { sequence: 0n, terminal: false });
          for (const step of steps) {
            await settle();
            // Acknowledged while later items are still on their way, so an item dropped beyond the
            // acknowledgement is lost with them if the connection then dies.
            acked = Math.max(acked, Math.floor(durable.length * step.ackFraction));
            feeder.acknowledge(BigInt(acked), false);
            if (step.reconnect) {
              inFlight = [];
              feeder.detach();
              // The server lost what it received after its last durable item; the rest must come again.
              durable.length = acked + Math.floor((durable.length - acked) * step.keptFraction);
              if (ended && durable.length < items.length) ended = false;
              acked = durable.length;
              feeder.attach(link, { sequence: BigInt(acked), terminal: ended });
            } else {
              receive();
            }
          }
          for (let i = 0; i < 200 && !ended; i++) {
            await settle();
            receive();
            feeder.acknowledge(BigInt(durable.length), false);
            // Everything sent is acknowledged: nothing is held for a resend.
            expect(feeder.unackedBytes).toBe(0);
          }
          feeder.acknowledge(BigInt(durable.length), true);
          expect(durable).toEqual(items);
          expect(feeder.done).toBe(true);
        },
      ),
      { numRuns: 150 },
    );
  });
});

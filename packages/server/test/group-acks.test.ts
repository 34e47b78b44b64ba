/** Group ACKs: one cumulative ACK per stream per tick; a direct flush keeps ACK order. */
import { describe, expect, it } from "vitest";
import type { StreamMapping } from "@golem-stream/wire";
import { GroupAcks, type GroupAck } from "../src/attachment/group-acks.js";

const mapping = (channel: number): StreamMapping => ({ channel, direction: "output", streamToken: `token-${channel}` });
const nextTick = () => new Promise<void>((resolve) => process.nextTick(resolve));

function recorder() {
  const sent: [string, GroupAck<string>][] = [];
  let flushes = 0;
  const acks = new GroupAcks<string, string>(
    (stream, ack) => sent.push([stream, ack]),
    () => flushes++,
  );
  return { acks, sent, flushes: () => flushes };
}

describe("GroupAcks", () => {
  it("commits of one tick become one ACK per stream, with the highest count and every mapping in order", async () => {
    const { acks, sent, flushes } = recorder();
    acks.add("a", 1n, [mapping(3)], ["child-3"]);
    acks.add("b", 5n, [], []);
    acks.add("a", 2n, [], []);
    acks.add("a", 4n, [mapping(4)], ["child-4"]);
    expect(sent).toEqual([]);
    expect(acks.pending).toBe(2);
    await nextTick();
    expect(sent).toEqual([
      ["a", { count: 4n, mappings: [mapping(3), mapping(4)], introduced: ["child-3", "child-4"] }],
      ["b", { count: 5n, mappings: [], introduced: [] }],
    ]);
    expect(acks.pending).toBe(0);
    expect(flushes()).toBe(1);
  });

  it("a lone commit is acknowledged in the same tick; a later one gets its own ACK", async () => {
    const { acks, sent } = recorder();
    acks.add("a", 1n, [], []);
    await nextTick();
    acks.add("a", 2n, [], []);
    await nextTick();
    expect(sent.map(([, ack]) => ack.count)).toEqual([1n, 2n]);
  });

  it("flush sends a stream's pending ACK at once, so a direct ACK after it cannot overtake it", async () => {
    const { acks, sent } = recorder();
    acks.add("a", 3n, [], []);
    acks.add("b", 1n, [], []);
    acks.flush("a");
    expect(sent.map(([stream, ack]) => [stream, ack.count])).toEqual([["a", 3n]]);
    acks.flush("a"); // nothing pending: nothing sent
    await nextTick();
    expect(sent.map(([stream, ack]) => [stream, ack.count])).toEqual([
      ["a", 3n],
      ["b", 1n],
    ]);
  });
});

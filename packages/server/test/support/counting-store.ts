/**
 * The in-memory store counting what the budget tests compare (session-budget,
 * node-budget), and the `reverse` items they send: counts, never timings.
 */
import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import { MemorySessionStore } from "../../src/index.js";
import { type InputChunk, type NewStream } from "../../src/store/index.js";
import { RawClient, demoStart, outputValues, v } from "../helpers.js";

export const ITEM = 32 * 1024;
/** Item i: its number, then one letter to ITEM characters (ASCII). */
export const item = (i: number): string => `<${i}>`.padEnd(ITEM, String.fromCharCode(97 + (i % 26)));
export const reversed = (text: string): string => Array.from(text).reverse().join("");

/** The in-memory store (everything it holds is process memory), counting input commits. */
export class CountingStore extends MemorySessionStore {
  /** Input items committed: what the ACK high-water reports. */
  inputCommitted = 0;
  /** Input payload bytes handed to the store and not yet committed. */
  inputUncommittedBytes = 0;
  maxInputUncommittedBytes = 0;
  /** While set, input commits wait for it. */
  gate: Promise<void> | undefined;

  override async acceptInput(chunk: InputChunk, introduced: readonly NewStream[]): Promise<void> {
    this.inputUncommittedBytes += chunk.data.length;
    this.maxInputUncommittedBytes = Math.max(this.maxInputUncommittedBytes, this.inputUncommittedBytes);
    if (this.gate !== undefined) await this.gate;
    await super.acceptInput(chunk, introduced);
    this.inputUncommittedBytes -= chunk.data.length;
    this.inputCommitted += Number(chunk.itemCount);
  }
}

/** Every item arrived, reversed, in order, and the session finished. */
export function expectAllReversed(messages: Parameters<typeof outputValues>[0], channel: number, items: number): void {
  const rejected = messages.find((m) => m.type === "invocationRejected");
  expect(rejected).toBeUndefined();
  const values = outputValues(messages, channel);
  expect(values).toHaveLength(items);
  values.forEach((value, i) => {
    if (value.kind !== "string" || value.value !== reversed(item(i))) throw new Error(`output item ${i} is not input item ${i} reversed`);
  });
  expect(messages.at(-1)?.type).toBe("invocationFinished");
}

/** Starts `reverse`; returns the client, the input channel and the output channel. */
export async function reverse(url: string): Promise<{ client: RawClient; input: number; output: number }> {
  const client = await RawClient.connect(url);
  client.send(demoStart("reverse", v.record(v.stream(randomUUID()))));
  const accepted = await client.nextOf("invocationAccepted");
  const result = await client.nextOf("invocationResult");
  return { client, input: accepted.mappings[0]!.channel, output: result.mappings[0]!.channel };
}

export function sendAll(client: RawClient, channel: number, items: number): void {
  for (let i = 0; i < items; i++) client.send({ type: "inputStreamItem", channel, sequence: BigInt(i), value: v.str(item(i)) });
  client.send({ type: "inputStreamEnd", channel, sequence: BigInt(items) });
}

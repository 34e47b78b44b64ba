/** Values and start messages of the demo catalogue (decisions-v1 section 7), built by hand. */
import { createHash, randomUUID } from "node:crypto";
import type { InvocationStart, SchemaValueJson, ServerMessage } from "@golem-stream/wire";
import { Mismatch, show } from "./check.js";

export const val = {
  str: (value: string): SchemaValueJson => ({ kind: "string", value }),
  u32: (value: number): SchemaValueJson => ({ kind: "u32", value }),
  record: (...fields: SchemaValueJson[]): SchemaValueJson => ({ kind: "record", value: { fields: fields as never } }),
  stream: (provisionalRef: string): SchemaValueJson => ({ kind: "stream", value: { provisionalRef } }),
};

export function demoStart(method: string, methodParameters: SchemaValueJson, overrides: Partial<InvocationStart> = {}): InvocationStart {
  return {
    type: "invocationStart",
    attemptId: randomUUID(),
    config: [],
    idempotencyKey: `conformance-${randomUUID()}`,
    methodParameters,
    selector: {
      agentType: "echo",
      application: "demo",
      constructorParameters: val.record(val.str("conformance")),
      environment: "default",
      method,
    },
    ...overrides,
  };
}

/** A start and the provisional reference of its input stream. */
export interface StartWithInput {
  readonly start: InvocationStart;
  readonly ref: string;
}

/** A start of a method whose one parameter is an input stream (`reverse`, `digest`, `split`), with a fresh provisional reference. */
export function inputStart(method: "reverse" | "digest" | "split", overrides: Partial<InvocationStart> = {}): StartWithInput {
  const ref = randomUUID();
  return { start: demoStart(method, val.record(val.stream(ref)), overrides), ref };
}

/** A `reverse` start with a fresh provisional reference for its input. */
export function reverseStart(overrides: Partial<InvocationStart> = {}): StartWithInput {
  return inputStart("reverse", overrides);
}

/** What `digest` returns for `bytes`: their count (u64) and SHA-256 (hex). */
export function digestOf(bytes: Uint8Array): SchemaValueJson {
  return val.record({ kind: "u64", value: String(bytes.length) }, val.str(createHash("sha256").update(bytes).digest("hex")));
}

export function countStart(to: number, delayMs: number, overrides: Partial<InvocationStart> = {}): InvocationStart {
  return demoStart("count", val.record(val.u32(to), val.u32(delayMs)), overrides);
}

/**
 * A `journal` start: `count`'s parameters; each item is `record{index: u32, step: string, now: u64,
 * random: f64}`, where `step`, `now` and `random` are journaled once before the first item (a
 * method of the project's demo catalogue beyond decisions-v1 section 7).
 */
export function journalStart(to: number, delayMs: number, overrides: Partial<InvocationStart> = {}): InvocationStart {
  return demoStart("journal", val.record(val.u32(to), val.u32(delayMs)), overrides);
}

/** One item of a `journal` stream: its index, and its journaled values as their wire JSON. */
export interface JournalItem {
  readonly index: number;
  readonly journaled: { readonly step: unknown; readonly now: unknown; readonly random: unknown };
}

/** The items of a `journal` output stream, in order; a value of another shape is a mismatch. */
export function journalItems(messages: readonly ServerMessage[], channel: number): JournalItem[] {
  return outputValues(messages, channel).map((value) => {
    const fields = (value as { kind?: unknown; value?: { fields?: unknown } }).value?.fields;
    if ((value as { kind?: unknown }).kind !== "record" || !Array.isArray(fields) || fields.length !== 4)
      throw new Mismatch(`a journal item is not a record of 4 fields: ${show(value)}`);
    const [index, step, now, random] = fields as { kind?: unknown; value?: unknown }[];
    if (index?.kind !== "u32" || typeof index.value !== "number") throw new Mismatch(`a journal item's index is not a u32: ${show(value)}`);
    return { index: index.value, journaled: { step, now, random } };
  });
}

/** Items of a value output stream, in order. */
export function outputValues(messages: readonly ServerMessage[], channel: number): unknown[] {
  return messages.flatMap((m) => (m.type === "outputStreamItem" && m.channel === channel ? [m.value] : []));
}

/** The u32 payloads of a `count` output stream. */
export function countValues(messages: readonly ServerMessage[], channel: number): number[] {
  return outputValues(messages, channel).map((v) => (v as { value: number }).value);
}

export function range(n: number, from = 0): number[] {
  return Array.from({ length: n }, (_, i) => from + i);
}

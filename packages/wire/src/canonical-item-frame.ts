/**
 * What the two canonical item shortcuts (decode-input-item.ts on the
 * server, decode-output-item.ts on the client) read the same way: the tail
 * after the value, the channel and sequence digits, and a value that is not
 * a plain string node. Each function checks its part with the codec the full
 * decoder uses for it, so a shortcut that answers gives the full decoder's
 * message; the heads, which differ, stay in their own files.
 */
import { LIMITS, U64_MAX } from "./limits.js";
import type { SchemaValueJson } from "./messages.js";
import { channelCodec, schemaValueCodec } from "./fields.js";
import { parseStrictJson, type StrictJsonOptions } from "./strict-json.js";

/** Where the channel's digits begin in both shortcuts' heads. */
export const CHANNEL_START = '{"channel":'.length;
const TAIL = /,"version":1\}/y;
const TAIL_LENGTH = ',"version":1}'.length;
const DIGIT_0 = 0x30;
/** Decimals of at most this many digits are exact as a double (below 2^53), so need no string for BigInt. */
const EXACT_DIGITS = 15;
/** One level of the depth limit is the message object around the value. */
const VALUE_OPTIONS: StrictJsonOptions = { maxBytes: LIMITS.maxTextMessageBytes, maxDepth: LIMITS.maxJsonDepth - 1 };

/** The end of the value that begins at `valueStart`: where the closing `,"version":1}` starts, when `text` ends with it after at least one character of value; otherwise -1. */
export function canonicalValueEnd(text: string, valueStart: number): number {
  const valueEnd = text.length - TAIL_LENGTH;
  if (valueEnd <= valueStart) return -1;
  TAIL.lastIndex = valueEnd;
  return TAIL.test(text) ? valueEnd : -1;
}

/** The channel written as the canonical digits `text[start, end)` (at most 10 of them); throws as `channelCodec` does. */
export function canonicalChannel(text: string, start: number, end: number): number {
  return channelCodec.decode(digitsValue(text, start, end), "channel");
}

/**
 * The sequence written as the canonical digits `text[start, end)` (at most
 * 20 of them); undefined outside `u64Codec`'s range or when it leaves no room
 * for the item itself (the variants' own check).
 */
export function canonicalSequence(text: string, start: number, end: number): bigint | undefined {
  const sequence = end - start <= EXACT_DIGITS ? BigInt(digitsValue(text, start, end)) : BigInt(text.slice(start, end));
  return sequence >= U64_MAX ? undefined : sequence;
}

/** The value `text[start, end)` through the strict parser and `schemaValueCodec`; throws as they do. */
export function strictItemValue(text: string, start: number, end: number): SchemaValueJson {
  return schemaValueCodec.decode(parseStrictJson(text.slice(start, end), VALUE_OPTIONS), "value");
}

/** The value of the canonical digits `text[start, end)`, at most `EXACT_DIGITS` of them. */
function digitsValue(text: string, start: number, end: number): number {
  let value = 0;
  for (let i = start; i < end; i++) value = value * 10 + (text.charCodeAt(i) - DIGIT_0);
  return value;
}

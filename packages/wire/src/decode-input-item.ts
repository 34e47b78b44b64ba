/**
 * A shortcut for the message a server decodes most: an `inputStreamItem` in
 * the canonical form every client encoder writes (members in code-point
 * order, no whitespace between them, the head in plain digits):
 *
 *   {"channel":C,"sequence":"S","type":"inputStreamItem","value":V,"version":1}
 *
 * Only the value `V` goes through the strict parser, so the head costs no
 * object from `JSON.parse`, no member table and no second walk of its text.
 * A `V` that is a plain string node, `{"kind":"string","value":"T"}` with
 * nothing escaped in `T` (the item of every `stream<string>`), does not go
 * through it either: such text is exactly one strict JSON value whose string
 * is `T` itself, so it is read in place (`plainStringNode`).
 *
 * It only ever answers for text the full decoder accepts, with the message
 * the full decoder gives; everything else (any other spelling, any error) is
 * `undefined` and goes to the full decoder, which decides and reports. Why
 * the two agree: when `V` is exactly one strict JSON value, the whole text is
 * an object with exactly these five distinct members, nesting one level
 * deeper than `V`; and each member is checked here by the codec the full
 * decoder uses for it (test/decode-input-item.test.ts holds the two to each
 * other on generated and mutated messages).
 */
import { LIMITS, U64_MAX } from "./limits.js";
import type { InputStreamItem, SchemaValueJson } from "./messages.js";
import { channelCodec, schemaValueCodec } from "./fields.js";
import { parseStrictJson, type StrictJsonOptions } from "./strict-json.js";
import { rememberStringNode } from "./string-node-text.js";
import { isWellFormedText } from "./utf8.js";

const HEAD = '{"channel":';
const AFTER_CHANNEL = ',"sequence":"';
const AFTER_SEQUENCE = '","type":"inputStreamItem","value":';
const TAIL = ',"version":1}';
/** Digits of the largest channel (2^32 - 1) and of the largest u64. */
const MAX_CHANNEL_DIGITS = 10;
const MAX_U64_DIGITS = 20;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
/** Decimals of at most this many digits are exact as a double (below 2^53), so need no string for BigInt. */
const EXACT_DIGITS = 15;
/** One level of the depth limit is the message object around the value. */
const VALUE_OPTIONS: StrictJsonOptions = { maxBytes: LIMITS.maxTextMessageBytes, maxDepth: LIMITS.maxJsonDepth - 1 };
const STRING_NODE_HEAD = '{"kind":"string","value":"';
const STRING_NODE_TAIL = '"}';
/**
 * A run of characters a JSON string holds as they are: no quote, no
 * backslash, no control character. Sticky: `test` from `lastIndex` leaves
 * `lastIndex` at the run's end, without a match object.
 */
const PLAIN_RUN = /[^"\\\u0000-\u001f]*/y;

/** The message, when `text` (already bounded and well-formed) is a canonical input item; otherwise undefined. */
export function decodeCanonicalInputItem(text: string): InputStreamItem | undefined {
  if (!text.startsWith(HEAD) || !text.endsWith(TAIL)) return undefined;
  const channelEnd = digitsEnd(text, HEAD.length, MAX_CHANNEL_DIGITS);
  if (channelEnd < 0 || !text.startsWith(AFTER_CHANNEL, channelEnd)) return undefined;
  const sequenceStart = channelEnd + AFTER_CHANNEL.length;
  const sequenceEnd = digitsEnd(text, sequenceStart, MAX_U64_DIGITS);
  if (sequenceEnd < 0 || !text.startsWith(AFTER_SEQUENCE, sequenceEnd)) return undefined;
  const valueStart = sequenceEnd + AFTER_SEQUENCE.length;
  const valueEnd = text.length - TAIL.length;
  if (valueEnd <= valueStart) return undefined;
  try {
    const channel = channelCodec.decode(digitsValue(text, HEAD.length, channelEnd), "channel");
    const sequence = sequenceEnd - sequenceStart <= EXACT_DIGITS ? BigInt(digitsValue(text, sequenceStart, sequenceEnd)) : BigInt(text.slice(sequenceStart, sequenceEnd));
    // u64Codec's range, and room for the item itself (the variant's own check).
    if (sequence >= U64_MAX) return undefined;
    const value = plainStringNode(text, valueStart, valueEnd) ?? schemaValueCodec.decode(parseStrictJson(text.slice(valueStart, valueEnd), VALUE_OPTIONS), "value");
    return { type: "inputStreamItem", channel, sequence, value };
  } catch {
    return undefined;
  }
}

/**
 * The node `{"kind":"string","value":T}` when `text[start, end)` is exactly
 * `{"kind":"string","value":"T"}` with `T` well-formed and holding no quote,
 * backslash or control character; otherwise undefined (the strict parser
 * decides). Such text is one strict JSON value: two distinct members, one
 * level deep, a string with no escape (so none that is a lone surrogate).
 */
function plainStringNode(text: string, start: number, end: number): SchemaValueJson | undefined {
  const bodyStart = start + STRING_NODE_HEAD.length;
  const bodyEnd = end - STRING_NODE_TAIL.length;
  if (bodyEnd < bodyStart || !text.startsWith(STRING_NODE_HEAD, start) || !text.startsWith(STRING_NODE_TAIL, bodyEnd)) return undefined;
  PLAIN_RUN.lastIndex = bodyStart;
  PLAIN_RUN.test(text);
  if (PLAIN_RUN.lastIndex !== bodyEnd) return undefined;
  const body = text.slice(bodyStart, bodyEnd);
  if (!isWellFormedText(body)) return undefined;
  // This text is the node's canonical form: kept for the store's copy of the value (string-node-text.ts).
  rememberStringNode(text, start, body);
  return { kind: "string", value: body };
}

/** The value of the canonical digits `text[start, end)`, at most `EXACT_DIGITS` of them. */
function digitsValue(text: string, start: number, end: number): number {
  let value = 0;
  for (let i = start; i < end; i++) value = value * 10 + (text.charCodeAt(i) - DIGIT_0);
  return value;
}

/**
 * The end of a canonical unsigned decimal (`0` or a non-zero digit and
 * digits) of at most `maxDigits` digits starting at `start`, or -1.
 */
function digitsEnd(text: string, start: number, maxDigits: number): number {
  let i = start;
  const limit = Math.min(text.length, start + maxDigits + 1);
  while (i < limit) {
    const c = text.charCodeAt(i);
    if (c < DIGIT_0 || c > DIGIT_9) break;
    i++;
  }
  const count = i - start;
  if (count === 0 || count > maxDigits) return -1;
  if (count > 1 && text.charCodeAt(start) === DIGIT_0) return -1;
  return i;
}

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
import { plainStringNodeBody } from "./plain-string-node.js";

/**
 * The text before `V`, in one sticky expression (`test` from `lastIndex` 0
 * leaves `lastIndex` at `V`, without a match object): the channel and the
 * sequence as canonical unsigned decimals of at most 10 and 20 digits (the
 * digits of 2^32 - 1 and of the largest u64). Literal text is compared by
 * the expression engine several times faster than by `startsWith`.
 */
const HEAD = /\{"channel":(?:0|[1-9][0-9]{0,9}),"sequence":"(?:0|[1-9][0-9]{0,19})","type":"inputStreamItem","value":/y;
const CHANNEL_START = '{"channel":'.length;
const AFTER_CHANNEL = ',"sequence":"'.length;
const AFTER_SEQUENCE = '","type":"inputStreamItem","value":'.length;
const TAIL = /,"version":1\}/y;
const TAIL_LENGTH = ',"version":1}'.length;
const COMMA = ",";
const DIGIT_0 = 0x30;
/** Decimals of at most this many digits are exact as a double (below 2^53), so need no string for BigInt. */
const EXACT_DIGITS = 15;
/** One level of the depth limit is the message object around the value. */
const VALUE_OPTIONS: StrictJsonOptions = { maxBytes: LIMITS.maxTextMessageBytes, maxDepth: LIMITS.maxJsonDepth - 1 };
/** The message, when `text` (already bounded and well-formed) is a canonical input item; otherwise undefined. */
export function decodeCanonicalInputItem(text: string): InputStreamItem | undefined {
  HEAD.lastIndex = 0;
  if (!HEAD.test(text)) return undefined;
  const valueStart = HEAD.lastIndex;
  const valueEnd = text.length - TAIL_LENGTH;
  if (valueEnd <= valueStart) return undefined;
  TAIL.lastIndex = valueEnd;
  if (!TAIL.test(text)) return undefined;
  // HEAD matched: the channel's digits end at the first comma, the sequence's where HEAD's last literal begins.
  const channelEnd = text.indexOf(COMMA, CHANNEL_START);
  const sequenceStart = channelEnd + AFTER_CHANNEL;
  const sequenceEnd = valueStart - AFTER_SEQUENCE;
  try {
    const channel = channelCodec.decode(digitsValue(text, CHANNEL_START, channelEnd), "channel");
    const sequence =
      sequenceEnd - sequenceStart <= EXACT_DIGITS
        ? BigInt(digitsValue(text, sequenceStart, sequenceEnd))
        : BigInt(text.slice(sequenceStart, sequenceEnd));
    // u64Codec's range, and room for the item itself (the variant's own check).
    if (sequence >= U64_MAX) return undefined;
    const value =
      plainStringNode(text, valueStart, valueEnd) ??
      schemaValueCodec.decode(parseStrictJson(text.slice(valueStart, valueEnd), VALUE_OPTIONS), "value");
    return { type: "inputStreamItem", channel, sequence, value };
  } catch {
    return undefined;
  }
}

/** The node of a plain string value (plain-string-node.ts); its text is kept as the node's canonical form for the store's copy of the value (string-node-text.ts). */
function plainStringNode(text: string, start: number, end: number): SchemaValueJson | undefined {
  const body = plainStringNodeBody(text, start, end);
  if (body === undefined) return undefined;
  rememberStringNode(text, start, body);
  return { kind: "string", value: body };
}

/** The value of the canonical digits `text[start, end)`, at most `EXACT_DIGITS` of them. */
function digitsValue(text: string, start: number, end: number): number {
  let value = 0;
  for (let i = start; i < end; i++) value = value * 10 + (text.charCodeAt(i) - DIGIT_0);
  return value;
}

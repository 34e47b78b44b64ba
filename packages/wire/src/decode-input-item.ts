/**
 * A shortcut for the message a server decodes most: an `inputStreamItem` in
 * the canonical form every client encoder writes (members in code-point
 * order, no whitespace between them, the head in plain digits):
 *
 *   {"channel":C,"sequence":"S","type":"inputStreamItem","value":V,"version":1}
 *
 * Only the value `V` goes through the strict parser, so the head costs no
 * object from `JSON.parse`, no member table and no second walk of its text.
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
import type { InputStreamItem } from "./messages.js";
import { channelCodec, schemaValueCodec } from "./fields.js";
import { parseStrictJson } from "./strict-json.js";

const HEAD = '{"channel":';
const AFTER_CHANNEL = ',"sequence":"';
const AFTER_SEQUENCE = '","type":"inputStreamItem","value":';
const TAIL = ',"version":1}';
/** Digits of the largest channel (2^32 - 1) and of the largest u64. */
const MAX_CHANNEL_DIGITS = 10;
const MAX_U64_DIGITS = 20;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;

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
    const channel = channelCodec.decode(Number(text.slice(HEAD.length, channelEnd)), "channel");
    const sequence = BigInt(text.slice(sequenceStart, sequenceEnd));
    // u64Codec's range, and room for the item itself (the variant's own check).
    if (sequence >= U64_MAX) return undefined;
    // One level of the limit is the message object around the value.
    const json = parseStrictJson(text.slice(valueStart, valueEnd), { maxBytes: LIMITS.maxTextMessageBytes, maxDepth: LIMITS.maxJsonDepth - 1 });
    const value = schemaValueCodec.decode(json, "value");
    return { type: "inputStreamItem", channel, sequence, value };
  } catch {
    return undefined;
  }
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

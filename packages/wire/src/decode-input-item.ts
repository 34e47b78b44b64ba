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
import type { InputStreamItem, SchemaValueJson } from "./messages.js";
import { rememberStringNode } from "./string-node-text.js";
import { plainStringNodeBody } from "./plain-string-node.js";
import { CHANNEL_START, canonicalChannel, canonicalSequence, canonicalValueEnd, strictItemValue } from "./canonical-item-frame.js";

/**
 * The text before `V`, in one sticky expression (`test` from `lastIndex` 0
 * leaves `lastIndex` at `V`, without a match object): the channel and the
 * sequence as canonical unsigned decimals. Literal text is compared by the
 * expression engine several times faster than by `startsWith`. Their
 * lengths, at most 10 and 20 digits (the digits of 2^32 - 1 and of the
 * largest u64), are checked after the match: as bounds inside the
 * expression (`[0-9]{0,9}`) they took V8 a third longer to match.
 */
const HEAD = /\{"channel":(?:0|[1-9][0-9]*),"sequence":"(?:0|[1-9][0-9]*)","type":"inputStreamItem","value":/y;
const MAX_CHANNEL_DIGITS = 10;
const MAX_SEQUENCE_DIGITS = 20;
const AFTER_CHANNEL = ',"sequence":"'.length;
const AFTER_SEQUENCE = '","type":"inputStreamItem","value":'.length;
const COMMA = ",";

/**
 * The message, when `text` (already bounded and well-formed) is a canonical
 * input item; otherwise undefined. `asciiBytes`: what `text` was decoded
 * from, when it has as many bytes as `text` has characters (string-node-text.ts
 * keeps them for a string node's canonical bytes).
 */
export function decodeCanonicalInputItem(text: string, asciiBytes?: Uint8Array): InputStreamItem | undefined {
  HEAD.lastIndex = 0;
  if (!HEAD.test(text)) return undefined;
  const valueStart = HEAD.lastIndex;
  const valueEnd = canonicalValueEnd(text, valueStart);
  if (valueEnd < 0) return undefined;
  // HEAD matched: the channel's digits end at the first comma, the sequence's where HEAD's last literal begins.
  const channelEnd = text.indexOf(COMMA, CHANNEL_START);
  const sequenceStart = channelEnd + AFTER_CHANNEL;
  const sequenceEnd = valueStart - AFTER_SEQUENCE;
  if (channelEnd - CHANNEL_START > MAX_CHANNEL_DIGITS || sequenceEnd - sequenceStart > MAX_SEQUENCE_DIGITS) return undefined;
  try {
    const channel = canonicalChannel(text, CHANNEL_START, channelEnd);
    const sequence = canonicalSequence(text, sequenceStart, sequenceEnd);
    if (sequence === undefined) return undefined;
    const value = plainStringNode(text, valueStart, valueEnd, asciiBytes) ?? strictItemValue(text, valueStart, valueEnd);
    return { type: "inputStreamItem", channel, sequence, value };
  } catch {
    return undefined;
  }
}

/** The node of a plain string value (plain-string-node.ts); its text is kept as the node's canonical form for the store's copy of the value (string-node-text.ts). */
function plainStringNode(text: string, start: number, end: number, asciiBytes: Uint8Array | undefined): SchemaValueJson | undefined {
  const body = plainStringNodeBody(text, start, end);
  if (body === undefined) return undefined;
  rememberStringNode(text, start, body, asciiBytes);
  return { kind: "string", value: body };
}

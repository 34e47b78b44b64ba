/**
 * A shortcut for the message a client decodes most: an `outputStreamItem`
 * introducing no stream, in the canonical form a server writes (members in
 * code-point order, no whitespace, the head in plain digits, a cursor token
 * with nothing escaped):
 *
 *   {"channel":C,"cursorToken":"T","mappings":[],"sequence":"S","type":"outputStreamItem","value":V,"version":1}
 *
 * The mirror of the server's input item shortcut (decode-input-item.ts): only
 * the value `V` goes through the strict parser, and a plain string node (the
 * item of every `stream<string>`) not even through it (plain-string-node.ts).
 * It only ever answers for text the full decoder accepts, with the message
 * the full decoder gives; everything else (any other spelling, any error,
 * any mapping) is `undefined` and goes to the full decoder, which decides and
 * reports. Why the two agree: when `V` is exactly one strict JSON value, the
 * whole text is an object with exactly these seven distinct members, nesting
 * one level deeper than `V`; the token's text holds only visible ASCII other
 * than `"` and `\`, so it is its own JSON string and what `tokenCodec`
 * accepts (1 to 8192 characters); every other member is checked by the codec
 * the full decoder uses for it (test/decode-output-item.test.ts holds the two
 * to each other on generated and mutated messages).
 */
import { LIMITS } from "./limits.js";
import type { OutputStreamItem, SchemaValueJson } from "./messages.js";
import { plainStringNodeBody } from "./plain-string-node.js";
import { CHANNEL_START, canonicalChannel, canonicalSequence, canonicalValueEnd, strictItemValue } from "./canonical-item-frame.js";

/**
 * The text before `V`, in one sticky expression (`test` from `lastIndex` 0
 * leaves `lastIndex` at `V`, without a match object): the channel and the
 * sequence as canonical unsigned decimals of at most 10 and 20 digits, the
 * token as characters that JSON writes as they are; at most `maxTokenBytes`
 * of them is checked apart, from where it ends. (Written into the
 * expression as `{1,8192}`, the bound took V8 twice as long to match as the
 * whole head does now: about 0.36 against 0.17 µs for a 220-character token.)
 */
const HEAD =
  /\{"channel":(?:0|[1-9][0-9]{0,9}),"cursorToken":"[\x21\x23-\x5b\x5d-\x7e]+","mappings":\[\],"sequence":"(?:0|[1-9][0-9]{0,19})","type":"outputStreamItem","value":/y;
const AFTER_CHANNEL = ',"cursorToken":"'.length;
const AFTER_TOKEN = '","mappings":[],"sequence":"'.length;
const AFTER_SEQUENCE = '","type":"outputStreamItem","value":'.length;
const COMMA = ",";
const QUOTE = '"';

/** The message, when `text` (already bounded and well-formed) is a canonical output item introducing no stream; otherwise undefined. */
export function decodeCanonicalOutputItem(text: string): OutputStreamItem | undefined {
  HEAD.lastIndex = 0;
  if (!HEAD.test(text)) return undefined;
  const valueStart = HEAD.lastIndex;
  const valueEnd = canonicalValueEnd(text, valueStart);
  if (valueEnd < 0) return undefined;
  // HEAD matched: the channel's digits end at the first comma, the token at the first quote after it
  // (it holds none), the sequence where HEAD's last literal begins.
  const channelEnd = text.indexOf(COMMA, CHANNEL_START);
  const tokenStart = channelEnd + AFTER_CHANNEL;
  const tokenEnd = text.indexOf(QUOTE, tokenStart);
  if (tokenEnd - tokenStart > LIMITS.maxTokenBytes) return undefined;
  const sequenceStart = tokenEnd + AFTER_TOKEN;
  const sequenceEnd = valueStart - AFTER_SEQUENCE;
  try {
    const channel = canonicalChannel(text, CHANNEL_START, channelEnd);
    const sequence = canonicalSequence(text, sequenceStart, sequenceEnd);
    if (sequence === undefined) return undefined;
    const body = plainStringNodeBody(text, valueStart, valueEnd);
    const value: SchemaValueJson = body !== undefined ? { kind: "string", value: body } : strictItemValue(text, valueStart, valueEnd);
    return { type: "outputStreamItem", channel, cursorToken: text.slice(tokenStart, tokenEnd), mappings: [], sequence, value };
  } catch {
    return undefined;
  }
}

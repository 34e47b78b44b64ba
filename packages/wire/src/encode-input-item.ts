/**
 * The client's hottest encoding, `inputStreamItem`, in two parts: the value's
 * canonical text, checked once, and the few characters around it, which
 * change when the item is sent again (another connection maps the stream to
 * another channel). A client keeps the text with the item and frames it for
 * each send, instead of encoding the whole message through the variant table
 * every time (that table and the message object it builds were most of a
 * small item's encoding cost).
 *
 * Canonical JSON sorts the members channel < sequence < type < value <
 * version, so the message is `inputStreamItemHead(channel, sequence)`, the
 * value's text, and `INPUT_ITEM_TAIL`. A property test holds the parts to
 * `encodeClientMessage` byte for byte, and the errors to its errors.
 */
import { canonicalJsonWithin, canonicalStringNode } from "./canonical-json.js";
import { encodeClientMessage, tooLargeAsText } from "./encode.js";
import { callerFault } from "./errors.js";
import { isItemPosition, schemaValueCodec } from "./fields.js";
import { CHANNEL_MAX, LIMITS, U64_MAX } from "./limits.js";
import type { SchemaValueJson } from "./messages.js";
import { utf8ByteLength } from "./utf8.js";

/** What follows the value in every `inputStreamItem`. */
export const INPUT_ITEM_TAIL = ',"version":1}';

/** What precedes the value in `inputStreamItem` on `channel` at `sequence`; both must be valid (`isInputItemPosition`). */
export function inputStreamItemHead(channel: number, sequence: bigint): string {
  return `{"channel":${channel},"sequence":"${sequence}","type":"inputStreamItem","value":`;
}

/** The checks the `channel` and `sequence` members of an `inputStreamItem` must pass (the item needs room: sequence + 1 <= 2^64 - 1). */
export const isInputItemPosition: (channel: unknown, sequence: unknown) => boolean = isItemPosition;

/** The longest head: every message with a value this much shorter than the limit fits. */
const MAX_HEAD_CHARS = inputStreamItemHead(CHANNEL_MAX, U64_MAX).length;

/**
 * The canonical text of `value` as `encodeClientMessage({ type: "inputStreamItem", channel,
 * sequence, value })` writes it, after every check that call makes (the value's outline, what
 * canonical JSON can carry, its depth inside the message, the 8 MiB text limit of the whole
 * message): it throws exactly what that call throws. The message is
 * `inputStreamItemHead(channel, sequence) + text + INPUT_ITEM_TAIL`.
 */
export function encodeInputStreamItemValue(channel: number, sequence: bigint, value: SchemaValueJson): string {
  try {
    return encodeValue(channel, sequence, value);
  } catch (error) {
    throw callerFault(error);
  }
}

function encodeValue(channel: number, sequence: bigint, value: SchemaValueJson): string {
  if (!isInputItemPosition(channel, sequence) || value === undefined) {
    // A bad channel or sequence, or no value: the variant table reports it, in its own words.
    const text = encodeClientMessage({ type: "inputStreamItem", channel, sequence, value });
    return text.slice(inputStreamItemHead(channel, sequence).length, text.length - INPUT_ITEM_TAIL.length);
  }
  schemaValueCodec.encode(value, "value");
  const max = LIMITS.maxTextMessageBytes;
  // The value is a member of the message: one level down from its root, and given the room the
  // whole message's walk gives it (all but the head and the message's closing brace), so both
  // stop at the same point of a value too large, with the same error. (A string node, the common
  // item, is written without a walk to stop and measured below.)
  const text = canonicalStringNode(value) ?? canonicalJsonWithin(value, 1, max - inputStreamItemHead(channel, sequence).length - 1);
  if (text === undefined) throw tooLargeAsText();
  if ((MAX_HEAD_CHARS + text.length + INPUT_ITEM_TAIL.length) * 3 > max) {
    // Near the limit: the exact count, as the whole message's check makes it (head and tail are ASCII).
    const frame = inputStreamItemHead(channel, sequence).length + INPUT_ITEM_TAIL.length;
    const length = frame + text.length;
    if (length > max || (length * 3 > max && frame + utf8ByteLength(text) > max)) throw tooLargeAsText();
  }
  return text;
}

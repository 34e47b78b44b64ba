/**
 * Encodes `inputStreamItem` messages once per item instead of once per send.
 *
 * The feeder must encode every item when the source yields it (to charge its
 * exact size to the unacknowledged buffer and to fail a malformed item as the
 * source's failure, not as a send error on some later reconnect). That
 * encoding goes through the checked path (the wire's `encodeClientMessage`: every rule of the
 * decoder). What it proves about the value holds for every later send of the
 * same item: only `channel` (the connection's mapping) and `sequence` can
 * differ, and both are checked again here. The value's canonical text is
 * therefore kept and framed by concatenation, which is canonical JSON because
 * the message's members sort as channel < sequence < type < value < version.
 * `test/item-encoding.test.ts` checks, for generated values, channels and
 * sequences, that the result is byte-identical to `encodeMessage`.
 *
 * The text is keyed by the value object the feeder built (a private deep copy
 * made by `bindProvisionalRefs`, never mutated afterwards), so a message whose
 * value was not checked here — any message built elsewhere — takes the
 * checked path.
 */
import { CHANNEL_MAX, LIMITS, U64_MAX, encodeClientMessage as encodeChecked, type ClientMessage, type SchemaValueJson } from "@golem-stream/wire";

const checkedValueTexts = new WeakMap<SchemaValueJson, string>();

const TAIL = ',"version":1}';
const head = (channel: number, sequence: bigint): string => `{"channel":${channel},"sequence":"${sequence}","type":"inputStreamItem","value":`;

/**
 * A value this large could, with a longer channel number, cross the 8 MiB
 * text limit, which the checked path reports as `limit-exceeded`: such items
 * are always encoded by the checked path.
 */
const MAX_FRAMED_VALUE_CHARS = Math.floor((LIMITS.maxTextMessageBytes - 128) / 3);

/**
 * Encodes `{inputStreamItem, channel, sequence, value}` through the checked
 * path and remembers the value's canonical text. Returns the message's length
 * (UTF-16 units, as `encodeMessage(...).length`). Throws what `encodeMessage`
 * throws.
 */
export function checkInputItem(channel: number, sequence: bigint, value: SchemaValueJson): number {
  const text = encodeChecked({ type: "inputStreamItem", channel, sequence, value });
  const prefix = head(channel, sequence);
  // Always true for canonical JSON; checked so that a future member can never be framed away.
  if (text.startsWith(prefix) && text.endsWith(TAIL)) {
    const valueText = text.slice(prefix.length, text.length - TAIL.length);
    if (valueText.length <= MAX_FRAMED_VALUE_CHARS) checkedValueTexts.set(value, valueText);
  }
  return text.length;
}

/** The wire's `encodeClientMessage(message)`, without re-validating an item value `checkInputItem` already checked. */
export function encodeClientMessage(message: ClientMessage): string | Uint8Array {
  if (message.type === "inputStreamItem") {
    const valueText = checkedValueTexts.get(message.value);
    const { channel, sequence } = message;
    if (
      valueText !== undefined &&
      Number.isInteger(channel) &&
      channel >= 1 &&
      channel <= CHANNEL_MAX &&
      typeof sequence === "bigint" &&
      sequence >= 0n &&
      sequence < U64_MAX // the item needs room: sequence + 1 <= 2^64 - 1
    ) {
      return head(channel, sequence) + valueText + TAIL;
    }
  }
  return encodeChecked(message);
}

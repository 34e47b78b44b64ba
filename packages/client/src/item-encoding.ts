/**
 * Encodes `inputStreamItem` messages once per item instead of once per send.
 *
 * The feeder must encode every item when the source yields it (to charge its
 * exact size to the unacknowledged buffer and to fail a malformed item as the
 * source's failure, not as a send error on some later reconnect). That
 * encoding is the wire's `encodeInputStreamItemValue`: every check
 * `encodeClientMessage` makes of the message, the value's canonical text as
 * the result. What it proves about the value holds for every later send of
 * the same item: only `channel` (the connection's mapping) and `sequence` can
 * differ, and both are checked again here. The text is kept with the item
 * (as UTF-8, pending-values.ts), sent in a `CheckedInputItem` message, and
 * framed by concatenation for each send (canonical JSON: the message's
 * members sort as channel < sequence < type < value < version). `test/item-encoding.test.ts` checks, for
 * generated values, channels and sequences, that the result is
 * byte-identical to `encodeMessage`.
 *
 * The text is made from the value object the feeder built (a private deep
 * copy made by `bindProvisionalRefs`) at once, so later changes to the
 * application's objects cannot reach it. A message that is not a
 * `CheckedInputItem` — any message built elsewhere — takes the checked path.
 */
import {
  LIMITS,
  encodeClientMessage as encodeChecked,
  type ClientMessage,
  type EncodeOptions,
  type SchemaValueJson,
} from "@golem-stream/wire";
import { INPUT_ITEM_TAIL, encodeInputStreamItemValue, inputStreamItemHead, isInputItemPosition } from "@golem-stream/wire/internal";
import type { Connection } from "./transport.js";

/**
 * A value this large could, with a longer channel number, cross the 8 MiB
 * text limit, which the checked path reports as `limit-exceeded`: such items
 * are always encoded by the checked path.
 */
const MAX_FRAMED_VALUE_CHARS = Math.floor((LIMITS.maxTextMessageBytes - 128) / 3);

/**
 * The canonical text of an item's value, after every check `encodeMessage`
 * makes of `{inputStreamItem, channel, sequence, value}`; throws what it
 * throws. With `checkedItemLength` it gives the message's length.
 */
export function checkInputItem(channel: number, sequence: bigint, value: SchemaValueJson): string {
  return encodeInputStreamItemValue(channel, sequence, value);
}

/** The head's characters besides the channel's and the sequence's digits. */
const HEAD_CHARS = inputStreamItemHead(0, 0n).length - 2;
const MAX_EXACT = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * The length (UTF-16 units, as `encodeMessage(...).length`) of the item whose value
 * `checkInputItem` returned `valueText` for. Counted, not built: the head is made again for each
 * send (`CheckedInputItem.framed`), and making it here too cost a string per item.
 */
export function checkedItemLength(channel: number, sequence: bigint, valueText: string): number {
  const sequenceDigits = sequence > MAX_EXACT ? sequence.toString().length : decimalDigits(Number(sequence));
  return HEAD_CHARS + decimalDigits(channel) + sequenceDigits + valueText.length + INPUT_ITEM_TAIL.length;
}

/** The digits of a non-negative integer written in decimal (exact below 2^53). */
function decimalDigits(value: number): number {
  let digits = 1;
  for (let rest = value; rest >= 10; rest = Math.floor(rest / 10)) digits++;
  return digits;
}

/**
 * An `inputStreamItem` whose value `checkInputItem` checked, made from that
 * value's canonical text, which is all a pending item keeps (the
 * value's objects, kept for every unacknowledged item, were work for the
 * garbage collector). Only this package's transports are handed one
 * (`senderFor`); `value` (a getter: the checked path reads it) parses the
 * text back — canonical JSON parses to a value equal to the one encoded
 * (members in sorted order), and encodes back to the same text.
 */
export class CheckedInputItem {
  readonly type = "inputStreamItem";
  readonly channel: number;
  readonly sequence: bigint;
  readonly #valueText: string;

  constructor(channel: number, sequence: bigint, valueText: string) {
    this.channel = channel;
    this.sequence = sequence;
    this.#valueText = valueText;
  }

  /** The value, parsed from its canonical text on each read. */
  get value(): SchemaValueJson {
    return JSON.parse(this.#valueText) as SchemaValueJson;
  }

  /** The message's text, or `undefined` when it must take the checked path. */
  framed(): string | undefined {
    const { channel, sequence } = this;
    if (this.#valueText.length > MAX_FRAMED_VALUE_CHARS || !isInputItemPosition(channel, sequence)) return undefined;
    return inputStreamItemHead(channel, sequence) + this.#valueText + INPUT_ITEM_TAIL;
  }
}

/** The wire's `encodeClientMessage(message)`, without re-validating an item value `checkInputItem` already checked. */
export function encodeClientMessage(message: ClientMessage, options?: EncodeOptions): string | Uint8Array {
  if (message instanceof CheckedInputItem) {
    const text = message.framed();
    if (text !== undefined) return text;
  }
  return encodeChecked(message, options);
}

/** Connections of this package's transports: they encode every message with `encodeClientMessage` above. */
const framingConnections = new WeakSet<Connection>();

/** Marks a connection that encodes with `encodeClientMessage` (so it may be handed a `CheckedInputItem`). */
export function framesCheckedItems<C extends Connection>(connection: C): C {
  framingConnections.add(connection);
  return connection;
}

/**
 * How the runtime sends on `connection`: as it is to this package's
 * transports; a transport of the application's own gets every message as a
 * plain object (a `CheckedInputItem` turned into one), which spreading,
 * cloning or logging sees whole. Decided once per connection, not per item.
 */
export function senderFor(connection: Connection): (message: ClientMessage) => void {
  if (framingConnections.has(connection)) return (message) => connection.send(message);
  return (message) =>
    connection.send(
      message instanceof CheckedInputItem
        ? { type: message.type, channel: message.channel, sequence: message.sequence, value: message.value }
        : message,
    );
}

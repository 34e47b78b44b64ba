/**
 * How long a line of stdin (or of a file bound to a stream parameter) may be (stdin-lines.ts), and what the message says about one that is
 * longer.
 *
 * A `stream<string>` item travels as a JSON string inside one `inputStreamItem` text message,
 * which the protocol bounds at 8 MiB (decisions-v1 §6); the value's byte charge (8 MiB, 1 + its
 * UTF-8 length) is never the tighter bound. What the message holds besides the line is measured
 * from the wire's own encoding, with the longest channel number and sequence any send of the
 * item could carry (a resend after a reconnect goes on another channel), so a line within the
 * limit fits in every send. JSON escaping counts: a quote or a backslash takes 2 bytes there, a
 * control character 2 or 6 (\t, \u0001), every other byte 1.
 */
import { CHANNEL_MAX, LIMITS, U64_MAX, encodeClientMessage } from "@golem-stream/wire";

export interface LineLimit {
  /** The most bytes a line may take: its text without the CR and LF that end it, or that text as a JSON string. */
  readonly maxBytes: number;
  /** The line is measured as the JSON string it travels as (`maxBytes` is then what is left of a message for it). */
  readonly asJsonString?: boolean;
}

/** What an `inputStreamItem` of an empty string takes, the largest channel and sequence included. */
const EMPTY_STRING_ITEM_BYTES = (
  encodeClientMessage({
    type: "inputStreamItem",
    channel: CHANNEL_MAX,
    sequence: U64_MAX - 1n,
    value: { kind: "string", value: "" },
  }) as string
).length;

/** A line for a `stream<string>`: the room one text message leaves for the item's JSON string (8 388 478 bytes). */
export const STRING_ITEM_LINE: LineLimit = { maxBytes: LIMITS.maxTextMessageBytes - EMPTY_STRING_ITEM_BYTES, asJsonString: true };

/**
 * A line of JSON, for any other element type: no longer than the largest value's byte charge.
 * The item made from it can take more or less room than the line; the client checks that the
 * item fits in a message when it is sent.
 */
export const JSON_VALUE_LINE: LineLimit = { maxBytes: LIMITS.maxValueByteCharge - 16 };

/** The message for line `lineNumber` (1-based) of `source` (`stdin`, or a file's path), longer than `limit`. */
export function tooLongMessage(lineNumber: number, limit: LineLimit, source = "stdin"): string {
  if (limit.asJsonString !== true) return `${source} line ${lineNumber} is longer than ${limit.maxBytes} bytes`;
  return (
    `${source} line ${lineNumber} is too long: a stream<string> item must fit in one protocol message of ` +
    `${LIMITS.maxTextMessageBytes} bytes, which leaves ${limit.maxBytes} bytes for the line as a JSON string ` +
    "(there a quote or a backslash takes 2 bytes, a control character 2 or 6)"
  );
}

/** The bytes of `text` (UTF-8, valid or not) between the quotes of its JSON string. */
export function escapedLength(text: Uint8Array): number {
  let length = text.byteLength;
  for (const byte of text) {
    if (byte === 0x22 || byte === 0x5c) length += 1;
    else if (byte < 0x20) length += SHORT_ESCAPES.has(byte) ? 1 : 5;
  }
  return length;
}

/** Control characters JSON writes as a backslash and a letter (\b \t \n \f \r); the others as \u00XX. */
const SHORT_ESCAPES = new Set([0x08, 0x09, 0x0a, 0x0c, 0x0d]);

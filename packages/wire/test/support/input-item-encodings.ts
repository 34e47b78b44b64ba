/**
 * The two ways to encode an `inputStreamItem` that must agree byte for byte and error for error:
 * the fast-path parts (head, value, tail) and the message table. Shared by the input item tests
 * and the slow 8 MiB text-limit test.
 */
import { ProtocolError, encodeClientMessage, type SchemaValueJson } from "../../src/index.js";
import { INPUT_ITEM_TAIL, encodeInputStreamItemValue, inputStreamItemHead } from "../../src/internal.js";

/** What a call gives: its text, or its error as comparable data. */
export function outcome(encode: () => string): string {
  try {
    return `ok ${encode()}`;
  } catch (error) {
    return error instanceof ProtocolError ? `${error.code} ${error.path} ${error.message}` : `not a ProtocolError: ${String(error)}`;
  }
}

/** The whole message through the parts, or the parts' error. */
export const viaParts = (channel: number, sequence: bigint, value: SchemaValueJson) => () =>
  inputStreamItemHead(channel, sequence) + encodeInputStreamItemValue(channel, sequence, value) + INPUT_ITEM_TAIL;

/** The whole message through `encodeClientMessage`, or its error. */
export const viaTable = (channel: number, sequence: bigint, value: SchemaValueJson) => () =>
  encodeClientMessage({ type: "inputStreamItem", channel, sequence, value });

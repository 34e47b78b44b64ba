/**
 * `canonicalValueBytes`: the bytes a value item's log row keeps are exactly
 * the UTF-8 of its canonical text, whether they come as a view of the message
 * (a string item read in place from an all-ASCII message) or encoded afresh
 * (any other item). The view shares the message's memory and is not a copy.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeSchemaGraph, t } from "@golem-stream/schema-value";
import {
  canonicalJson,
  decodeClientMessage,
  encodeClientMessage,
  type InputStreamItem,
  type JsonValue,
  type SchemaValueJson,
} from "@golem-stream/wire";
import { canonicalValueBytes, decodeValue } from "../src/values.js";

const strings = decodeSchemaGraph(t.graph(t.string()));
const numbers = decodeSchemaGraph(t.graph(t.list(t.u32())));
const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);
/** The bytes as a plain `Uint8Array` (a `Buffer` view compares unequal to one with the same bytes). */
const plainBytes = (bytes: Uint8Array): Uint8Array => new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);

/** The item as a server receives it, as bytes, and the bytes its row keeps. */
function stored(value: SchemaValueJson, graph = strings): { message: Uint8Array; row: Uint8Array } {
  const message = utf8(encodeClientMessage({ type: "inputStreamItem", channel: 3, sequence: 41n, value }) as string);
  const item = decodeClientMessage(message, false) as InputStreamItem;
  const decoded = decodeValue(item.value as never, graph, "provisional", "value");
  return { message, row: canonicalValueBytes(decoded) };
}

describe("canonicalValueBytes", () => {
  it("keeps the UTF-8 of the canonical text of any string item, escaped, non-ASCII or plain", () => {
    const text = fc.oneof(
      fc.string({ unit: fc.constantFrom('"', "\\", "\u0000", "\u001f", " ", "\u007f", "\u2028", "a", "é", "😀") }),
      fc.string({ unit: "grapheme", maxLength: 40 }),
      fc.string(),
    );
    fc.assert(
      fc.property(text, (value) => {
        const node = { kind: "string", value } as SchemaValueJson;
        expect(plainBytes(stored(node).row)).toEqual(utf8(canonicalJson(node as unknown as JsonValue)));
      }),
      { numRuns: 2000 },
    );
  });

  it("hands on a plain ASCII string item as a view of its message; anything else as bytes of its own", () => {
    const plain = stored({ kind: "string", value: "x".repeat(64) });
    expect(plain.row.buffer).toBe(plain.message.buffer);
    expect(new TextDecoder().decode(plain.row)).toBe(`{"kind":"string","value":"${"x".repeat(64)}"}`);
    for (const other of [stored({ kind: "string", value: "café" }), stored({ kind: "string", value: 'say "hi"' })]) {
      expect(other.row.buffer).not.toBe(other.message.buffer);
    }
    const list = { kind: "list", value: { elements: [{ kind: "u32", value: 7 }] } } as SchemaValueJson;
    const numbersRow = stored(list, numbers);
    expect(plainBytes(numbersRow.row)).toEqual(utf8(canonicalJson(list as unknown as JsonValue)));
    expect(numbersRow.row.buffer).not.toBe(numbersRow.message.buffer);
  });
});

/**
 * The string node every `stream<string>` item carries, read in place: text
 * that is exactly `{"kind":"string","value":"T"}` with nothing escaped in
 * `T` is one strict JSON value whose string is `T` itself (two distinct
 * members, one level deep, a string with no escape, so none that is a lone
 * surrogate), so neither the strict parser nor `JSON.parse` needs to see it.
 * Shared by the canonical input item (decode-input-item.ts) and output item
 * (decode-output-item.ts) shortcuts.
 */
import { isWellFormedText } from "./utf8.js";

/**
 * A string node whose text holds no quote, no backslash and no control
 * character (what JSON strings hold as they are), up to its closing quote.
 */
const PLAIN_STRING_NODE = /\{"kind":"string","value":"[^"\\\u0000-\u001f]*"\}/y;
const STRING_NODE_HEAD = '{"kind":"string","value":"'.length;
const STRING_NODE_TAIL = '"}'.length;

/**
 * `T` when `text[start, end)` is exactly `{"kind":"string","value":"T"}`
 * with `T` well-formed and holding no quote, backslash or control
 * character; otherwise undefined (the strict parser decides).
 */
export function plainStringNodeBody(text: string, start: number, end: number): string | undefined {
  PLAIN_STRING_NODE.lastIndex = start;
  if (!PLAIN_STRING_NODE.test(text) || PLAIN_STRING_NODE.lastIndex !== end) return undefined;
  const body = text.slice(start + STRING_NODE_HEAD, end - STRING_NODE_TAIL);
  return isWellFormedText(body) ? body : undefined;
}

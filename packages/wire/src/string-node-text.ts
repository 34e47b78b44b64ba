/**
 * The canonical text of the string node the wire last read in place.
 *
 * A server decodes each input item of a `stream<string>` and then stores the
 * value's canonical text. When the item's value arrived as
 * `{"kind":"string","value":"T"}` with nothing escaped in `T`
 * (decode-input-item.ts), that text is already in the message, byte for
 * byte what canonical JSON writes for the node; `canonicalStringNodeText`
 * hands it out instead of having it written again (and, being a slice of
 * the message, it needs no flattening on its way to bytes).
 *
 * `isAsciiStringNodeText` says whether a text is that of the node just read
 * from a message that came as bytes, all of them ASCII: its UTF-8 length is
 * then its length, which a validator would otherwise count with a scan. And
 * `canonicalStringNodeBytes` hands out the node's canonical form as those
 * bytes themselves (a view of the message, no copy), where the text would be
 * encoded to UTF-8 again for the store.
 *
 * Only the last such node is kept, and only from a message of at most
 * `MAX_REMEMBERED_MESSAGE_CHARS` characters, so at most one small message
 * (and the bytes it came in) stays alive for it; the first answer lets go of it. The answer depends only
 * on the text asked about: it is given only for a text equal to the node's,
 * and the canonical text of a string node is a function of its text alone.
 */

/** Longest message (in UTF-16 units) whose string node is kept: 64 KiB. */
export const MAX_REMEMBERED_MESSAGE_CHARS = 64 * 1024;
/** `{"kind":"string","value":"` and `"}`: what surrounds the text in the node's canonical form. */
const NODE_HEAD_CHARS = 26;
const NODE_TAIL_CHARS = 2;

let message: string | undefined;
let text: string | undefined;
let nodeStart = 0;
/**
 * The bytes the message came in, when they are as many as its characters (every one of them
 * ASCII, so character `i` of the message is byte `i`); undefined otherwise.
 */
let asciiBytes: Uint8Array | undefined;

/**
 * Called by the decoder: `message[nodeStart, ...)` is the canonical text of a
 * string node whose text is `nodeText`, which needs no escape. `sourceBytes`:
 * what `source` was decoded from, when it has as many bytes as `source` has
 * characters (every one ASCII); undefined otherwise.
 */
export function rememberStringNode(source: string, start: number, nodeText: string, sourceBytes: Uint8Array | undefined): void {
  if (source.length > MAX_REMEMBERED_MESSAGE_CHARS) return;
  message = source;
  nodeStart = start;
  text = nodeText;
  asciiBytes = sourceBytes;
}

/**
 * Whether `nodeText` is the text of the string node the wire last read in
 * place, from a message whose bytes were all ASCII: then so is `nodeText`,
 * and its UTF-8 length is its length. Never true for any other text (an
 * equal string is the same text); asking lets go of nothing.
 */
export function isAsciiStringNodeText(nodeText: string): boolean {
  return asciiBytes !== undefined && message !== undefined && nodeText === text;
}

/**
 * `{"kind":"string","value":"<nodeText>"}`, the canonical JSON of the string
 * node with `nodeText`, when it is the text of the node the wire last read
 * in place; otherwise undefined (the caller writes it). Never anything else:
 * a caller may always use the answer as `canonicalJson({ kind: "string", value: nodeText })`.
 */
export function canonicalStringNodeText(nodeText: string): string | undefined {
  if (message === undefined || nodeText !== text) return undefined;
  const answer = message.slice(nodeStart, nodeStart + NODE_HEAD_CHARS + nodeText.length + NODE_TAIL_CHARS);
  forget();
  return answer;
}

/**
 * The UTF-8 of `canonicalStringNodeText(nodeText)` as a view of the bytes the
 * message came in, when `nodeText` is the text of the node the wire last read
 * in place from an all-ASCII message; otherwise undefined (the caller encodes
 * the text). The view shares the message's memory: it is the caller's to keep
 * only as long as it would keep the message.
 */
export function canonicalStringNodeBytes(nodeText: string): Uint8Array | undefined {
  if (asciiBytes === undefined || message === undefined || nodeText !== text) return undefined;
  const answer = asciiBytes.subarray(nodeStart, nodeStart + NODE_HEAD_CHARS + nodeText.length + NODE_TAIL_CHARS);
  forget();
  return answer;
}

function forget(): void {
  message = text = asciiBytes = undefined;
}

/**
 * Telling an identical resend from a conflicting one (protocol section 9).
 * Pure: the accepted chunks in, a verdict out. Two folders ask it: the
 * attachment, of a client's resend, and the cluster follower, of a commit
 * another node's attachment made first; it lives here, below both. Packed u8 input may be resent
 * with other batch boundaries than it was accepted with, so a range is
 * compared byte by byte across chunk boundaries.
 */
import type { InputChunk } from "../store/session-store.js";

/**
 * Whether `data` (the resent items `[from, to)`, `to` at most the high-water)
 * equals what was accepted. `stored` are the chunks overlapping the range, in
 * order. Unpacked streams compare one item: bytes and MIME type.
 */
export function sameInput(
  stored: readonly InputChunk[],
  from: bigint,
  to: bigint,
  data: Uint8Array,
  packed: boolean,
  mimeType: string | undefined,
): boolean {
  if (!packed) {
    const chunk = stored[0];
    return chunk !== undefined && chunk.sequence === from && chunk.mimeType === mimeType && bytesEqual(chunk.data, data);
  }
  let position = from;
  for (const chunk of stored) {
    const start = position - chunk.sequence;
    const end = (to < chunk.sequence + chunk.itemCount ? to : chunk.sequence + chunk.itemCount) - chunk.sequence;
    if (start < 0n) return false;
    const part = chunk.data.subarray(Number(start), Number(end));
    const resent = data.subarray(Number(position - from), Number(position - from) + part.length);
    if (!bytesEqual(part, resent)) return false;
    position += BigInt(part.length);
  }
  return position === to;
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

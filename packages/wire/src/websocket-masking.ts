/**
 * The XOR of RFC 6455 section 5.3, shared by the frames the client writes
 * (`websocket-text-frames.ts`) and the client frames the server reads
 * (`websocket-frame-reader.ts`): the same operation masks and unmasks.
 */

/**
 * XORs the `length` bytes of `view`'s buffer from `start` with the 4-byte key
 * at `keyAt`, four bytes at a time (read and written in the same byte order,
 * so each byte meets the key's byte at its place): a third of the time of a
 * loop over the bytes.
 */
export function mask(view: DataView, keyAt: number, start: number, length: number): void {
  const key = view.getUint32(keyAt, true);
  const end = start + length;
  let i = start;
  for (; i + 3 < end; i += 4) view.setUint32(i, view.getUint32(i, true) ^ key, true);
  // The tail starts a multiple of four bytes in, so its nth byte takes the key's nth.
  for (let j = 0; i < end; i++, j++) view.setUint8(i, view.getUint8(i) ^ view.getUint8(keyAt + j));
}

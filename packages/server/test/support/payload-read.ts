/** Reads back one payload a test wrote through `PayloadFiles` (the store reads many at once, `readInto`). */
import type { PayloadFiles, PayloadRef } from "../../src/store/payload-files.js";

export async function readPayload(files: PayloadFiles, ref: PayloadRef): Promise<Uint8Array> {
  const bytes = new Uint8Array(ref.length);
  await files.readInto(ref.sessionId, [{ offset: ref.offset, bytes }]);
  return bytes;
}

/**
 * The fetch the remote JWKS uses: the response body is read up to
 * `maxBytes` and no further, so a key set endpoint that answers with an
 * endless or huge body costs at most that much memory (the fetch then
 * fails, and the handshake that needed it is `internal-error`).
 */
import type { FetchImplementation } from "jose";

/** Largest JWKS response read (1 MiB): a key set is a few kilobytes. */
export const MAX_JWKS_RESPONSE_BYTES = 1024 * 1024;

export function boundedFetch(maxBytes: number): FetchImplementation {
  return async (url, options) => {
    const response = await fetch(url, options);
    const declared = Number(response.headers.get("content-length") ?? "0");
    if (declared > maxBytes) {
      await response.body?.cancel();
      throw new RangeError(`the JWKS response is larger than ${maxBytes} bytes`);
    }
    const chunks: Uint8Array[] = [];
    let total = 0;
    if (response.body !== null) {
      const reader = response.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        total += value.byteLength;
        if (total > maxBytes) {
          await reader.cancel();
          throw new RangeError(`the JWKS response is larger than ${maxBytes} bytes`);
        }
        chunks.push(value);
      }
    }
    return new Response(Buffer.concat(chunks), { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

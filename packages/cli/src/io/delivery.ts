/**
 * "Delivered" for the CLI means handed to the operating system: the write
 * callback has fired, so a crash of this process afterwards cannot lose the
 * bytes. Only then may an output cursor advance (protocol section 13).
 */
import type { Writable } from "node:stream";

export function deliver(out: Writable, chunk: string | Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => {
    out.write(chunk, (error) => (error ? reject(error) : resolve()));
  });
}

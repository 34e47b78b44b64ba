/**
 * The payload files' reads of one store read: while it walks its rows, each row whose bytes are in
 * a file is handed an empty array of its length; once the rows are read, one call reads them all
 * from the thread pool into those arrays (`PayloadFiles.readInto`), and the store's promise
 * resolves only after it. A 1 MiB read of a file written with direct I/O waits for the disk
 * (0.4–0.7 ms here), which a synchronous read spent blocking the event loop.
 */
import type { PayloadFiles, PayloadRead } from "./payload-files.js";
import type { PayloadReader } from "./sqlite-rows.js";

export class PayloadReads {
  readonly #wanted: PayloadRead[] = [];

  /** The bytes of a row kept in a payload file, to be filled by `start`; undefined for a row that holds its own. */
  readonly reader: PayloadReader = (row) => {
    if (row.payload_offset === null || row.payload_length === null) return undefined;
    const bytes = new Uint8Array(Number(row.payload_length));
    this.#wanted.push({ offset: Number(row.payload_offset), bytes });
    return bytes;
  };

  /** Starts the reads, the file opened before this returns; undefined if no row wanted one. */
  start(files: PayloadFiles, sessionOf: () => string): Promise<void> | undefined {
    return this.#wanted.length === 0 ? undefined : files.readInto(sessionOf(), this.#wanted);
  }
}

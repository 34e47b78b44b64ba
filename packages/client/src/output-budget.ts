/**
 * The session's output backpressure (protocol section 12, decisions §6): the
 * connection is paused when any one stream holds `maxEntries` undelivered
 * entries or the session holds `maxBytes`, and resumed once every stream is
 * back to half its entries and the session to half its bytes. Pausing stops
 * reading the socket, so TCP slows the server down; nothing is ever dropped
 * to make room. The half-way mark is hysteresis: resuming at the first entry
 * taken paused and resumed the socket once per item while a consumer caught
 * up (about 12 MB/s for 64 KiB items in the conformance kit's stalled-reader
 * scenario).
 */
export class OutputBudget<S extends { readonly queuedEntries: number }> {
  readonly #maxEntries: number;
  readonly #maxBytes: number;
  readonly #onChange: (paused: boolean) => void;
  readonly #full = new Set<S>();
  #bytes = 0;
  #paused = false;

  constructor(maxEntries: number, maxBytes: number, onChange: (paused: boolean) => void) {
    this.#maxEntries = maxEntries;
    this.#maxBytes = maxBytes;
    this.#onChange = onChange;
  }

  get paused(): boolean {
    return this.#paused;
  }

  /** `stream`'s queue changed by `bytes` (its entry count is read from the stream itself). */
  changed(stream: S, bytes: number): void {
    this.#bytes += bytes;
    // `#full`: streams at the limit, kept until they are back to half of it.
    if (stream.queuedEntries >= this.#maxEntries) this.#full.add(stream);
    else if (stream.queuedEntries <= this.#maxEntries / 2) this.#full.delete(stream);
    const paused = this.#paused
      ? this.#full.size > 0 || this.#bytes > this.#maxBytes / 2
      : this.#full.size > 0 || this.#bytes >= this.#maxBytes;
    if (paused === this.#paused) return;
    this.#paused = paused;
    this.#onChange(paused);
  }
}

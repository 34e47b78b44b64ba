/**
 * The session's output backpressure (protocol section 12, decisions §6): the
 * connection is paused while any one stream holds `maxEntries` undelivered
 * entries or the session holds `maxBytes`, and resumed as soon as neither
 * holds. Pausing stops reading the socket, so TCP slows the server down;
 * nothing is ever dropped to make room.
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
    if (stream.queuedEntries >= this.#maxEntries) this.#full.add(stream);
    else this.#full.delete(stream);
    const paused = this.#full.size > 0 || this.#bytes >= this.#maxBytes;
    if (paused === this.#paused) return;
    this.#paused = paused;
    this.#onChange(paused);
  }
}

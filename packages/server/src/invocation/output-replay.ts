/**
 * One output stream on a re-run (docs/durable-execution.md): what the run
 * before committed, read back from the store in order, which the re-run's
 * items are compared with instead of being written again. Reads a page of
 * events at a time (`PAGE_EVENTS`, `PAGE_BYTES`), so a long stream is
 * compared in bounded memory.
 */
import type { OutputEvent, SessionStore } from "../store/session-store.js";

/** Events and payload bytes read from the store at once. */
const PAGE_EVENTS = 64;
const PAGE_BYTES = 4 * 1024 * 1024;

type StoredItem = Extract<OutputEvent, { event: "item" }>;

export class OutputReplay {
  readonly #store: SessionStore;
  readonly #streamId: string;
  /** The stored item count: items below it are compared. */
  readonly until: bigint;
  /** The run before ended the stream: once compared, its producer stops. */
  readonly terminal: boolean;
  /** Items of the re-run compared so far. */
  position = 0n;
  #page: StoredItem[] = [];
  /** Bytes of `#page[0]` already compared (packed u8 items may be split differently by the re-run). */
  #offset = 0;
  /** Where the next page starts. */
  #next = 0n;

  constructor(store: SessionStore, streamId: string, until: bigint, terminal: boolean) {
    this.#store = store;
    this.#streamId = streamId;
    this.until = until;
    this.terminal = terminal;
  }

  get done(): boolean {
    return this.position >= this.until;
  }

  /** Whether the next stored item (a value or a blob) is `data` with `mimeType`; moves past it. */
  async matchItem(data: Uint8Array, mimeType: string | undefined): Promise<boolean> {
    const stored = await this.#head();
    this.#page.shift();
    this.position += 1n;
    return stored !== undefined && stored.mimeType === mimeType && sameBytes(stored.data, data);
  }

  /** Whether the next `bytes.length` stored bytes of a `u8` stream are `bytes` (at most `until - position` of them); moves past them. */
  async matchBytes(bytes: Uint8Array): Promise<boolean> {
    let at = 0;
    while (at < bytes.length) {
      const stored = await this.#head();
      if (stored === undefined) return false;
      const take = Math.min(stored.data.length - this.#offset, bytes.length - at);
      if (!sameBytes(stored.data.subarray(this.#offset, this.#offset + take), bytes.subarray(at, at + take))) return false;
      at += take;
      this.#offset += take;
      this.position += BigInt(take);
      if (this.#offset === stored.data.length) {
        this.#page.shift();
        this.#offset = 0;
      }
    }
    return true;
  }

  /** The stored item at `position`, reading the next page when needed; undefined past the stored items. */
  async #head(): Promise<StoredItem | undefined> {
    if (this.#page.length === 0 && this.#next < this.until) {
      const events = await this.#store.readOutput(this.#streamId, this.#next, PAGE_EVENTS, PAGE_BYTES);
      this.#page = events.filter((event): event is StoredItem => event.event === "item" && event.sequence < this.until);
      const last = this.#page.at(-1);
      this.#next = last === undefined ? this.until : last.sequence + last.itemCount;
    }
    return this.#page[0];
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}

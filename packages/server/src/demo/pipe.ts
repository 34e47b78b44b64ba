/**
 * A bounded single-consumer async queue, used by demo methods that feed two
 * output streams from one input (`split`). Writers wait while it is full,
 * so a slow consumer backpressures the reader of the input.
 */
export class Pipe<T> implements AsyncIterable<T> {
  readonly #items: T[] = [];
  #ended = false;
  #failure: { error: unknown } | undefined;
  #wakeReader: (() => void) | undefined;
  #wakeWriter: (() => void) | undefined;

  constructor(readonly capacity = 16) {}

  async write(item: T): Promise<void> {
    while (this.#items.length >= this.capacity && !this.#ended) {
      await new Promise<void>((resolve) => (this.#wakeWriter = resolve));
    }
    if (this.#ended) return; // the consumer went away: nothing reads it
    this.#items.push(item);
    this.#wake();
  }

  end(): void {
    this.#ended = true;
    this.#wake();
  }

  fail(error: unknown): void {
    this.#failure = { error };
    this.end();
  }

  #wake(): void {
    const reader = this.#wakeReader;
    this.#wakeReader = undefined;
    reader?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    try {
      for (;;) {
        const item = this.#items.shift();
        if (item !== undefined) {
          const writer = this.#wakeWriter;
          this.#wakeWriter = undefined;
          writer?.();
          yield item;
          continue;
        }
        if (this.#failure !== undefined) throw this.#failure.error;
        if (this.#ended) return;
        await new Promise<void>((resolve) => (this.#wakeReader = resolve));
      }
    } finally {
      // A consumer that stops early releases any blocked writer.
      this.#ended = true;
      const writer = this.#wakeWriter;
      this.#wakeWriter = undefined;
      writer?.();
    }
  }
}

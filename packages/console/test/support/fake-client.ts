/**
 * Just enough of the client for the console's `Run`, in memory: an
 * invocation whose streams, result, end and checkpoints the test drives, and
 * output streams that hand out items as the consumer asks for them and, as
 * the real one does, retain an item's cursor once the consumer asks for the
 * next.
 */
import type { Client, InvocationResult, OutputChunk, ResumeState } from "@golem-stream/client";

export class FakeStream {
  readonly streamToken: string;
  readonly schema = undefined;
  retainedCursor: string | undefined;
  readonly #queue: ({ item: OutputChunk } | { end: true } | { error: unknown })[] = [];
  #wake: (() => void) | undefined;
  #delivered = 0;

  constructor(token: string) {
    this.streamToken = token;
  }

  push(item: OutputChunk): void {
    this.#put({ item });
  }

  end(): void {
    this.#put({ end: true });
  }

  fail(error: unknown): void {
    this.#put({ error });
  }

  /** The cursor of item `index` of this stream. */
  cursor(index: number): string {
    return `${this.streamToken}@${index}`;
  }

  [Symbol.asyncIterator](): AsyncIterator<OutputChunk, undefined> {
    return {
      next: async () => {
        // Asking for the next delivers the one before: its cursor is retained.
        if (this.#delivered > 0) this.retainedCursor = this.cursor(this.#delivered - 1);
        while (this.#queue.length === 0) await new Promise<void>((resolve) => (this.#wake = resolve));
        const step = this.#queue.shift()!;
        if ("error" in step) throw step.error;
        if ("end" in step) return { done: true, value: undefined };
        this.#delivered++;
        return { done: false, value: step.item };
      },
    };
  }

  #put(step: { item: OutputChunk } | { end: true } | { error: unknown }): void {
    this.#queue.push(step);
    this.#wake?.();
    this.#wake = undefined;
  }
}

export class FakeInvocation {
  readonly cancelled: string[] = [];
  readonly result: Promise<InvocationResult>;
  readonly finished: Promise<{ readonly kind: "success" }>;
  readonly #listeners = new Map<string, ((event: unknown) => void)[]>();
  #settle!: { result: (value: InvocationResult) => void; finish: () => void; fail: (error: unknown) => void };
  readonly onCheckpoint: (state: ResumeState) => void | Promise<void>;

  constructor(onCheckpoint: (state: ResumeState) => void | Promise<void>) {
    this.onCheckpoint = onCheckpoint;
    let result!: (value: InvocationResult) => void;
    let resultFailed!: (error: unknown) => void;
    this.result = new Promise((resolve, reject) => ((result = resolve), (resultFailed = reject)));
    this.finished = new Promise((resolve, reject) => {
      this.#settle = {
        result,
        finish: () => resolve({ kind: "success" }),
        fail: (error) => {
          resultFailed(error);
          reject(error);
        },
      };
    });
  }

  on(event: string, listener: (event: unknown) => void): () => void {
    this.#listeners.set(event, [...(this.#listeners.get(event) ?? []), listener]);
    return () => undefined;
  }

  emit(event: string, payload: unknown): void {
    for (const listener of this.#listeners.get(event) ?? []) listener(payload);
  }

  /** Announces a new output stream. */
  stream(token: string): FakeStream {
    const stream = new FakeStream(token);
    this.emit("stream", stream);
    return stream;
  }

  succeed(result: InvocationResult = { kind: "none" }): void {
    this.#settle.result(result);
    this.#settle.finish();
  }

  fail(error: unknown): void {
    this.#settle.fail(error);
  }

  async cancel(reason?: string): Promise<{ kind: "delivered" }> {
    this.cancelled.push(reason ?? "");
    return { kind: "delivered" };
  }
}

/** A client whose `invoke` and `takeover` record what they were given and hand out `FakeInvocation`s. */
export function fakeClient(): {
  client: Client;
  calls: { kind: "invoke" | "takeover"; options: unknown; state?: ResumeState; invocation: FakeInvocation }[];
} {
  const calls: { kind: "invoke" | "takeover"; options: unknown; state?: ResumeState; invocation: FakeInvocation }[] = [];
  const client = {
    invoke(options: { onCheckpoint: (state: ResumeState) => void | Promise<void> }) {
      const invocation = new FakeInvocation(options.onCheckpoint);
      calls.push({ kind: "invoke", options, invocation });
      return invocation;
    },
    takeover(state: ResumeState, options: { onCheckpoint: (state: ResumeState) => void | Promise<void> }) {
      const invocation = new FakeInvocation(options.onCheckpoint);
      calls.push({ kind: "takeover", options, state, invocation });
      return invocation;
    },
  };
  return { client: client as unknown as Client, calls };
}

/**
 * `driveOutputSource` with a typed agent's async source (wrapped by
 * `mapAsyncIterable` in its conversion): it converts in its own loop instead
 * of iterating the wrapper, and keeps what iterating the wrapper gave: every
 * item converted and written in order, the next pulled only after a write
 * resolves, and the source's iteration ended when the conversion throws, a
 * write fails, or the signal aborts.
 */
import { describe, expect, it } from "vitest";
import { driveOutputSource } from "../src/invocation/output-source.js";
import { mapAsyncIterable } from "../src/invocation/mapped-iterable.js";
import type { OutputItem, OutputSource } from "../src/agent-host.js";

/** An async generator that records how far it was pulled and whether its iteration ended. */
function recordingSource(items: string[]): { iterable: AsyncIterable<string>; pulled: () => number; ended: () => boolean } {
  let pulled = 0;
  let ended = false;
  return {
    iterable: (async function* () {
      try {
        for (const item of items) {
          pulled++;
          yield item;
        }
      } finally {
        ended = true;
      }
    })(),
    pulled: () => pulled,
    ended: () => ended,
  };
}

/** The wrapped source, with the wrapper's own iterator made unusable: only the unwrapped path can read it. */
function wrapped(iterable: AsyncIterable<string>, convert: (item: string) => string): OutputSource {
  const mapped = mapAsyncIterable(iterable, convert) as AsyncIterable<string> & Record<symbol, unknown>;
  mapped[Symbol.asyncIterator] = () => {
    throw new Error("the wrapper's iterator was used");
  };
  return mapped as unknown as OutputSource;
}

describe("driveOutputSource with a converted async source", () => {
  it("converts and writes every item in order, reading the source itself", async () => {
    const { iterable, ended } = recordingSource(["a", "b", "c"]);
    const written: OutputItem[] = [];
    await driveOutputSource(
      wrapped(iterable, (item) => item.toUpperCase()),
      (item) => void written.push(item),
      new AbortController().signal,
    );
    expect(written).toEqual(["A", "B", "C"]);
    expect(ended()).toBe(true);
  });

  it("pulls the next item only once the write resolves", async () => {
    const { iterable, pulled } = recordingSource(["a", "b", "c"]);
    let release!: () => void;
    const firstWrite = new Promise<void>((resolve) => (release = resolve));
    let writes = 0;
    const driven = driveOutputSource(
      wrapped(iterable, (item) => item),
      () => (++writes === 1 ? firstWrite : undefined),
      new AbortController().signal,
    );
    // Let every microtask the source could run settle: nothing past the first item is pulled.
    for (let i = 0; i < 20; i++) await Promise.resolve();
    expect(writes).toBe(1);
    expect(pulled()).toBe(1);
    release();
    await driven;
    expect(writes).toBe(3);
    expect(pulled()).toBe(3);
  });

  it("a conversion that throws ends the source's iteration and rejects with its error", async () => {
    const { iterable, ended } = recordingSource(["a", "bad", "c"]);
    const written: OutputItem[] = [];
    const failure = new Error("not convertible");
    const convert = (item: string): string => {
      if (item === "bad") throw failure;
      return item;
    };
    await expect(
      driveOutputSource(wrapped(iterable, convert), (item) => void written.push(item), new AbortController().signal),
    ).rejects.toBe(failure);
    expect(written).toEqual(["a"]);
    expect(ended()).toBe(true);
  });

  it("a write that fails ends the source's iteration; an aborted signal stops it", async () => {
    const failing = recordingSource(["a", "b"]);
    const failure = new Error("store refused");
    await expect(
      driveOutputSource(
        wrapped(failing.iterable, (item) => item),
        () => Promise.reject(failure),
        new AbortController().signal,
      ),
    ).rejects.toBe(failure);
    expect(failing.ended()).toBe(true);

    const aborted = recordingSource(["a", "b", "c"]);
    const abort = new AbortController();
    const written: OutputItem[] = [];
    await driveOutputSource(
      wrapped(aborted.iterable, (item) => item),
      (item) => {
        written.push(item);
        abort.abort();
        return undefined;
      },
      abort.signal,
    );
    expect(written).toEqual(["a"]);
    expect(aborted.ended()).toBe(true);
  });
});

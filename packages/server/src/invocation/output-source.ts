/**
 * Drives an agent's `OutputSource` (async iterable, iterable or push-style
 * producer) into a `write` function, one item at a time: the next item is
 * pulled only when `write` resolves, i.e. when the session's window and
 * commit budget allow it, so a producer never runs ahead of what the
 * session can hold.
 */
import type { OutputItem, OutputSource } from "../agent-host.js";
import { mappedParts } from "./mapped-iterable.js";

export async function driveOutputSource(
  source: OutputSource,
  /** Undefined when the item was taken at once: no await (and its microtask turns) per item. */
  write: (item: OutputItem) => Promise<void> | undefined,
  signal: AbortSignal,
): Promise<void> {
  if (typeof source === "function") {
    const writeItem = async (item: OutputItem): Promise<void> => {
      if (signal.aborted) throw signal.reason;
      await write(item);
    };
    await source({
      signal,
      write: (item) => {
        const written = writeItem(item);
        // A producer that does not await a write (one after its stream ended, or after a
        // cancel) must not take the whole server down with an unhandled rejection; a producer
        // that awaits still gets it.
        written.catch(() => undefined);
        return written;
      },
    });
    return;
  }
  // A typed agent's async source comes wrapped in its conversion (contracts/implement.ts):
  // converted here, in this loop, instead of through the wrapper's own promise and
  // reaction per item. A conversion that throws leaves the loop, and `for await`
  // ends the source's iteration, as the wrapper would.
  const mapped = mappedParts(source);
  if (mapped !== undefined) {
    const convert = mapped.convert as (item: unknown) => OutputItem;
    for await (const raw of mapped.source) {
      if (signal.aborted) return;
      const pending = write(convert(raw));
      if (pending !== undefined) await pending;
    }
    return;
  }
  if (Symbol.asyncIterator in source) {
    for await (const item of source) {
      if (signal.aborted) return;
      const pending = write(item);
      if (pending !== undefined) await pending;
    }
    return;
  }
  for (const item of source) {
    if (signal.aborted) return;
    const pending = write(item);
    if (pending !== undefined) await pending;
  }
}

/** Distinguishes the three item shapes an agent may yield. */
export function isBinaryItem(item: OutputItem): item is { bytes: Uint8Array; mimeType?: string } {
  return !(item instanceof Uint8Array) && "bytes" in item && (item as { bytes: unknown }).bytes instanceof Uint8Array;
}

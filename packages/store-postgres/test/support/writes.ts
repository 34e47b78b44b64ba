/** Writes for the write queue's in-memory tests (write-queue*.test.ts), sent to a `FakeClient`. */
import type { LogAppend, WriteContext } from "../../src/write-queue.js";

/** A write that sends `text` (the test reads it back from the log), notifies `note` if given, and resolves with `value`. */
export const statement =
  <T>(text: string, value: T, note?: string) =>
  async (context: WriteContext): Promise<T> => {
    await context.query(text, [value]);
    if (note !== undefined) context.notify(note);
    return value;
  };

/** One output item of `stream` at `sequence`, as an append the queue may write in a run or a group statement. */
export function outputAppend(stream: string, sequence: number): LogAppend {
  return {
    log: "output",
    streamId: stream,
    sequence: BigInt(sequence),
    itemCount: 1n,
    data: new Uint8Array([sequence]),
    mimeType: undefined,
    note: (sessionId) => `${sessionId}:${stream}`,
  };
}

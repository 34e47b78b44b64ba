/**
 * Input chunks that join a queued write (`SqliteSessionStore.joinInputWatched`,
 * `InputAppendTask.join`): a chunk that continues the stream of a write
 * still waiting for its group commits with it, and its watcher is told once.
 * What the log holds is the same as if each chunk had been handed over alone:
 * every chunk read back as it was appended, in packed rows of at most
 * `maxPackedRowBytes`. A chunk that may not join is refused with nothing
 * changed, and then goes its own way.
 */
import { afterEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { InputChunk } from "../src/store/index.js";
import { recordingWatcher } from "./support/input-watcher.js";
import { bytes, removeStoreDirs, storeWithInput } from "./support/store-records.js";

afterEach(removeStoreDirs);

/** `storeWithInput`, with a chunk of its input stream made from text and the stream's texts read back. */
async function storeWithChunks(options: { maxPackedRowBytes?: number; payloadFileThreshold?: number } = {}) {
  const { store, input, dataDir } = await storeWithInput(options);
  const chunk = (sequence: bigint, text: string, more: Partial<InputChunk> = {}): InputChunk => ({
    streamId: input.streamId,
    sequence,
    itemCount: 1n,
    data: bytes(text),
    mimeType: undefined,
    ...more,
  });
  const texts = async (from: bigint, to: bigint) =>
    (await store.readInput(input.streamId, from, to)).map((c) => [c.sequence, new TextDecoder().decode(c.data)]);
  return { store, input, chunk, texts, dataDir };
}

describe("SqliteSessionStore.joinInputWatched", () => {
  it("chunks that join a queued write commit with it, are told once, and read back each as it was appended", async () => {
    // Rows of at most 24 bytes: the 40 joined items take several packed rows.
    const { store, input, chunk, texts } = await storeWithChunks({ maxPackedRowBytes: 24 });
    const told = recordingWatcher();
    store.acceptInputWatched(chunk(0n, "item 0"), undefined, told);
    for (let i = 1; i < 40; i++) expect(store.joinInputWatched(chunk(BigInt(i), `item ${i}`), undefined, told)).toBe(true);
    expect(told.calls).toEqual([]); // nothing is committed before the group
    await told.told;
    expect(told.calls).toEqual([undefined]); // one outcome for the forty chunks
    expect((await store.getStream(input.streamId))?.count).toBe(40n);
    const all = Array.from({ length: 40 }, (_, i) => [BigInt(i), `item ${i}`]);
    expect(await texts(0n, 40n)).toEqual(all);
    expect(await texts(17n, 19n)).toEqual(all.slice(17, 19)); // a range inside one packed row
    await store.close();
  });

  it("joined chunks are stored as the same rows as the same chunks appended one by one", async () => {
    // Sizes and counts that make single-chunk rows (longer than a row), packed rows and a count of several items.
    const texts = ["a", "bb", "c".repeat(30), "dd", "e", "f".repeat(9), "g", "h".repeat(25), "ii", "j"];
    const counts = [1n, 3n, 1n, 2n, 1n, 1n, 4n, 1n, 1n, 1n];
    const layout = async (joining: boolean) => {
      const { store, chunk, dataDir } = await storeWithChunks({ maxPackedRowBytes: 16 });
      let sequence = 0n;
      const chunks = texts.map((text, i) => {
        const c = chunk(sequence, text, { itemCount: counts[i] as bigint });
        sequence += counts[i] as bigint;
        return c;
      });
      if (joining) {
        const told = recordingWatcher();
        store.acceptInputWatched(chunks[0] as InputChunk, undefined, told);
        for (const c of chunks.slice(1)) expect(store.joinInputWatched(c, undefined, told)).toBe(true);
        await told.told;
      } else {
        // One group, each chunk its own append (`runRows` packs the run).
        await Promise.all(chunks.map((c) => store.acceptInput(c, [])));
      }
      await store.close();
      const db = new Database(join(dataDir, "sessions.db"), { readonly: true });
      try {
        return db.prepare("SELECT sequence, item_count, hex(data) AS data, hex(parts) AS parts FROM input_chunks ORDER BY sequence").all();
      } finally {
        db.close();
      }
    };
    const joined = await layout(true);
    expect(joined).toEqual(await layout(false));
    // Both kinds of row are there: packed rows, and rows of one chunk (too long to share one), whose `parts` is NULL (`hex` of it '').
    expect(joined.some((row) => (row as { parts: string }).parts === "")).toBe(true);
    expect(joined.some((row) => (row as { parts: string }).parts !== "")).toBe(true);
  });

  it("a chunk joins only a write still queued, of its own watcher, that it continues, with its bytes in the row; otherwise nothing changes", async () => {
    const { store, chunk, texts } = await storeWithChunks({ payloadFileThreshold: 100 });
    const first = recordingWatcher();
    const other = recordingWatcher();
    store.acceptInputWatched(chunk(0n, "a"), undefined, first);
    expect(store.joinInputWatched(chunk(1n, "b"), undefined, other)).toBe(false); // another write's watcher
    expect(store.joinInputWatched(chunk(2n, "gap"), undefined, first)).toBe(false); // does not continue it
    expect(store.joinInputWatched(chunk(1n, "typed", { mimeType: "text/plain" }), undefined, first)).toBe(false);
    expect(store.joinInputWatched(chunk(1n, "x".repeat(100)), undefined, first)).toBe(false); // goes to a payload file
    expect(store.joinInputWatched(chunk(1n, "stale"), 7n, first)).toBe(false); // a stale ownership epoch
    expect(store.joinInputWatched(chunk(1n, "b"), undefined, first)).toBe(true);
    await first.told;
    // Committed: the write is no longer queued, so nothing joins it any more.
    expect(store.joinInputWatched(chunk(2n, "c"), undefined, first)).toBe(false);
    const next = recordingWatcher();
    store.acceptInputWatched(chunk(2n, "c"), undefined, next);
    await next.told;
    expect([first.calls, other.calls, next.calls]).toEqual([[undefined], [], [undefined]]);
    expect(await texts(0n, 3n)).toEqual([
      [0n, "a"],
      [1n, "b"],
      [2n, "c"],
    ]);
    await store.close();
  });

  it("a write that fails fails every chunk that joined it, told once, and stores none of them", async () => {
    const { store, input, chunk, texts } = await storeWithChunks();
    const told = recordingWatcher();
    store.acceptInputWatched(chunk(5n, "gap"), undefined, told); // the stream is at 0: this write fails
    expect(store.joinInputWatched(chunk(6n, "after the gap"), undefined, told)).toBe(true);
    await told.told;
    expect(told.calls).toHaveLength(1);
    expect(told.calls[0]).toBeInstanceOf(Error);
    expect((await store.getStream(input.streamId))?.count).toBe(0n);
    expect(await texts(0n, 10n)).toEqual([]);
    await store.close();
  });
});

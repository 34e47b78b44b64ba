/**
 * Model-based: for any sequence of log writes — payloads on both sides of the
 * file threshold, issued together or awaited one by one, with reopenings of
 * the directory in between — the SQLite store with payload files answers every
 * read exactly as `MemorySessionStore` does (`src/testing/store-model.ts`,
 * shared with other stores as `@golem-stream/server/testing`).
 */
import { afterEach, expect, it } from "vitest";
import fc from "fast-check";
import { checkAgainstModel } from "../src/testing/index.js";
import { removeStoreDirs, sqliteModelStores } from "./support/store-records.js";

afterEach(removeStoreDirs);

const THRESHOLD = 256;

it("reads back the same as the in-memory model after any writes and reopenings", async () => {
  // One directory per run: `reopen` opens it again.
  await checkAgainstModel({
    fc,
    expect,
    threshold: THRESHOLD,
    ...sqliteModelStores({ payloadFileThreshold: THRESHOLD, synchronous: "normal" }),
    numRuns: 40,
  });
});

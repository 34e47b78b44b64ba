#!/usr/bin/env node
/**
 * What a read of one input item costs the SQLite store, read after read: a
 * client that reconnects resends every item it has no ACK for, and the
 * server checks each against the log (`readInput` of that one item) before
 * it drops the duplicate. A read of one item reads its whole packed row
 * (`maxPackedRowBytes`), so this is where a row's size shows.
 *
 *   node bench/one-item-reads.mjs [<build>/packages/server/dist]    # this checkout's dist by default
 *   N=50000 ROW=65536 node bench/one-item-reads.mjs                  # items, and maxPackedRowBytes
 *
 * The items (64-byte strings as a server stores them) are written as a fast
 * client's turns are: 1 800 chunks joined into each write.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const dist = process.argv[2] ?? fileURLToPath(new URL("../dist", import.meta.url));
const ITEMS = Number(process.env.N ?? 20000);
const TURN = 1800;
const { SqliteSessionStore } = await import(pathToFileURL(join(dist, "index.js")).href);
const { session, stream, startAttempt } = await import(pathToFileURL(join(dist, "testing/index.js")).href);

const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-one-item-reads-"));
const rowBytes = process.env.ROW === undefined ? {} : { maxPackedRowBytes: Number(process.env.ROW) };
const store = new SqliteSessionStore({ dataDir, synchronous: "normal", ...rowBytes });
try {
  const s = session();
  const input = stream(s.sessionId, "input");
  await store.createSession(s, [input], startAttempt(s));
  const data = Buffer.from(`{"kind":"string","value":"${"x".repeat(64)}"}`);
  const chunk = (i) => ({ streamId: input.streamId, sequence: BigInt(i), itemCount: 1n, data, mimeType: undefined });
  for (let start = 0; start < ITEMS; start += TURN) {
    const committed = new Promise((resolve, reject) => {
      const watcher = { inputSettled: (error) => (error === undefined ? resolve() : reject(error)) };
      store.acceptInputWatched(chunk(start), undefined, watcher);
      for (let i = start + 1; i < Math.min(ITEMS, start + TURN); i++) store.joinInputWatched(chunk(i), undefined, watcher);
    });
    await committed;
  }
  const began = performance.now();
  for (let i = 0; i < ITEMS; i++) {
    const read = await store.readInput(input.streamId, BigInt(i), BigInt(i + 1));
    if (read.length !== 1 || read[0].data.byteLength !== data.byteLength) throw new Error(`item ${i} read back wrong`);
  }
  const ms = performance.now() - began;
  console.log(`${dist}: ${ITEMS} reads of one item, ${((1000 * ms) / ITEMS).toFixed(1)} µs each (${ms.toFixed(0)} ms)`);
} finally {
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
}

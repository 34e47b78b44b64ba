#!/usr/bin/env node
/**
 * `readInput` of one item near the start, the middle and the end of a long
 * input stream of the SQLite store: the duplicate check of every resent
 * item after a reconnect makes this call. Its cost must not grow with the
 * item's position (it did: the scan began at the stream's first chunk,
 * 18.8 ms per call 200 000 items in).
 *
 *   node bench/read-input.mjs            # after `npx tsc -p tsconfig.json`
 *   READ_ITEMS=1000000 node bench/read-input.mjs
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteSessionStore } from "../dist/index.js";
import { session, stream } from "../dist/testing/index.js";

const ITEMS = Number(process.env.READ_ITEMS ?? 200_000);
const CALLS = 100;
const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-read-input-"));
const store = new SqliteSessionStore({ dataDir, synchronous: "normal" });
const owner = session();
const input = stream(owner.sessionId, "input", { elementKind: "value", elementGraph: '{"root":{"kind":"string","value":{}}}' });
await store.createSession(owner, [input], {
  attemptId: randomUUID(),
  operation: "start",
  descriptorDigest: "d",
  sessionId: owner.sessionId,
  generation: 1n,
});
const data = Buffer.from(`{"kind":"string","value":"${"x".repeat(40)}"}`);
for (let at = 0; at < ITEMS; at += 1000) {
  const writes = [];
  for (let i = at; i < Math.min(at + 1000, ITEMS); i++)
    writes.push(store.acceptInput({ streamId: input.streamId, sequence: BigInt(i), itemCount: 1n, data, mimeType: undefined }, []));
  await Promise.all(writes);
}
console.log(`readInput of one item in a stream of ${ITEMS} 64-byte items (SQLite store), ${CALLS} calls each:`);
for (const at of [10, Math.floor(ITEMS / 2), ITEMS - 10]) {
  const began = process.hrtime.bigint();
  for (let k = 0; k < CALLS; k++) await store.readInput(input.streamId, BigInt(at), BigInt(at + 1));
  console.log(`  at ${String(at).padStart(9)}: ${(Number(process.hrtime.bigint() - began) / 1e3 / CALLS).toFixed(1)} µs per call`);
}
await store.close();
rmSync(dataDir, { recursive: true, force: true });

/**
 * The payloads of bench/run.mjs, by BENCH_PG_PAYLOAD. How well they compress
 * decides what PostgreSQL's TOAST compression costs and saves (src/log-storage.ts):
 *   repeated  the client bench's own (default): every string item "x" × 64, every batch
 *             1 MiB of one byte value; pglz shrinks a row of them to about 1 %.
 *   text      64-character strings of words and numbers, each different, and batches of the
 *             same text; pglz shrinks them to about 60 %, at its slowest per byte.
 *   random    base64 of random bytes as strings, random bytes as batches; pglz gives up on them.
 * Strings stay 64 ASCII characters, so `tallied` checks the same counts.
 */
import { randomBytes, randomInt } from "node:crypto";
import { MIB } from "../../client/bench/throughput.mjs";

const WORDS = ["order", "user", "id", "total", "status", "shipped", "item", "price", "qty", "note", "ok", "eu-west", "retry", "at"];

/** A line of words and numbers, `length` ASCII characters. */
function text(length) {
  let line = "";
  while (line.length < length) line += `${WORDS[randomInt(WORDS.length)]}=${randomInt(100000)} `;
  return line.slice(0, length);
}

/** `{ items, batches }` of the same counts and sizes as `sizes` (benchSizes), of `kind`. */
export function benchPayloads(kind, sizes) {
  if (kind === "repeated") return { items: sizes.items, batches: sizes.batches };
  const item = kind === "text" ? () => text(64) : kind === "random" ? () => randomBytes(48).toString("base64") : undefined;
  if (item === undefined) throw new Error(`BENCH_PG_PAYLOAD must be repeated, text or random, got ${JSON.stringify(kind)}`);
  const batch = kind === "text" ? () => Buffer.from(text(MIB)) : () => randomBytes(MIB);
  // Eight different batches, sent in turn: enough that no cache sees one batch twice in a row.
  const distinct = Array.from({ length: Math.min(8, sizes.batches.length) }, batch);
  return {
    items: sizes.items.map(() => item()),
    batches: sizes.batches.map((_, i) => new Uint8Array(distinct[i % distinct.length])),
  };
}

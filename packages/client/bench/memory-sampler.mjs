// The memory sampler shared by bench/memory.mjs (its client process) and
// bench/peer.mjs (the receiver's answer to "memory").

/**
 * Peak memory between two "memory" requests. Sampled every 20 ms, starting
 * with the first request only, so bench/run.mjs (which never asks) keeps its
 * CPU rows free of the sampler. `heap` is heapUsed + arrayBuffers: every
 * Buffer and Uint8Array backing store allocated now, garbage included until
 * it is swept. Not `external`: it already contains `arrayBuffers`, and V8
 * updates it only at the next GC, so it still counts buffers freed since.
 */
const peak = { rss: 0, heap: 0 };
let sampler;
function sample() {
  const usage = process.memoryUsage();
  peak.rss = Math.max(peak.rss, usage.rss);
  peak.heap = Math.max(peak.heap, usage.heapUsed + usage.arrayBuffers);
  return usage;
}
/**
 * `{ peak, maxRSS, now }`: the sampled peaks since the previous request, the
 * kernel's lifetime peak RSS in bytes (exact, unlike a sample, but never
 * lower than an earlier peak), and the usage now — when the process runs
 * with --expose-gc, after a full GC, a turn for the concurrent sweeper to
 * free backing stores, and a second GC: what is live, not garbage.
 * The peaks then restart from `now`.
 */
export async function memoryReport() {
  sample();
  const report = { peak: { ...peak }, maxRSS: process.resourceUsage().maxRSS * 1024 };
  if (globalThis.gc !== undefined) {
    globalThis.gc();
    await new Promise((resolve) => setImmediate(resolve));
    globalThis.gc();
  }
  const now = process.memoryUsage();
  report.now = now;
  peak.rss = now.rss;
  peak.heap = now.heapUsed + now.arrayBuffers;
  sampler ??= setInterval(sample, 20).unref();
  return report;
}

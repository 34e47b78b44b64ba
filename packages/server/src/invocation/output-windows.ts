/**
 * The window of each output stream: events recorded and not yet sent by the
 * live attachment, by count (`stream.backlog`, the producer waits at
 * `limits.maxQueuedEntriesPerStream`, output-producers.ts) and by payload
 * bytes, which are charged to the session's byte permits until sent
 * (protocol section 12: "a slow stream backpressures the multiplexed
 * session"). So unsent output keeps input out: what a session has accepted
 * and not yet handed on, input queued plus output unsent, stays within its
 * budget (plus one window's overshoot, one item per stream), instead of the
 * budget for input and 256 items per output stream on top.
 *
 * Apart from `LiveSession` because it is arithmetic on one stream's
 * counters, called once per recorded and per sent event.
 */
import type { BytePermits } from "./byte-permits.js";
import type { StreamState } from "./stream-state.js";

/** An output event of `bytes` payload bytes was recorded and not yet sent: charged without waiting. */
export function chargeUnsent(stream: StreamState, bytes: number, permits: BytePermits): void {
  const charge = Math.min(bytes, permits.capacity);
  stream.backlog++;
  stream.backlogBytes += charge;
  // In the store, not in memory: the session's budget counts it, the node's does not (byte-permits.ts).
  permits.chargeUncounted(charge);
}

/** The attachment sent one output event of `stream` (`bytes` of payload): the producer may run further ahead. */
export function releaseSent(stream: StreamState, bytes: number, permits: BytePermits): void {
  if (stream.backlog > 0) stream.backlog--;
  const release = Math.min(bytes, stream.backlogBytes);
  stream.backlogBytes -= release;
  permits.releaseUncounted(release);
  wakeWindow(stream);
}

/**
 * Every output window starts afresh: what was unsent counts as sent. For
 * deliveries that may have been lost (`LiveSession`'s remote attachment
 * after a lost feed), a bound loosened once rather than a stall.
 */
export function restartWindows(streams: Iterable<StreamState>, permits: BytePermits): void {
  for (const stream of streams) {
    if (stream.direction !== "output" || stream.backlog === 0) continue;
    permits.releaseUncounted(stream.backlogBytes);
    stream.backlog = 0;
    stream.backlogBytes = 0;
    wakeWindow(stream);
  }
}

function wakeWindow(stream: StreamState): void {
  // Runs for every delivered item; a producer waits only when its window is full: nothing to allocate otherwise.
  if (stream.backlogWaiters.length === 0) return;
  for (const waiter of stream.backlogWaiters.splice(0)) waiter();
}

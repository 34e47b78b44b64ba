/**
 * Group ACKs (decisions: docs/protocol/server.md, Input). The chunks one
 * group commit recorded resolve together, and `inputStreamAck` is
 * cumulative, so one ACK per stream covers them all, with the mappings of
 * every nested stream they introduced, in order. The ACKs go out once the
 * commit's callbacks have run (`process.nextTick`), never later: a client
 * never waits for more input to see an ACK (decisions-v1 §8).
 *
 * Any other ACK of a stream (a resend's, a terminal's, a server cancel's)
 * must call `flush(stream)` first, so high-waters never go back.
 */
import type { StreamMapping } from "@golem-stream/wire";

/** What one grouped ACK acknowledges. */
export interface GroupAck<S> {
  /** The stream's committed high-water. */
  readonly count: bigint;
  readonly mappings: readonly StreamMapping[];
  /** Nested streams the mappings announce. */
  readonly introduced: readonly S[];
}

interface Pending<S> {
  count: bigint;
  readonly mappings: StreamMapping[];
  readonly introduced: S[];
}

export class GroupAcks<K, S> {
  readonly #pending = new Map<K, Pending<S>>();
  readonly #send: (stream: K, ack: GroupAck<S>) => void;
  readonly #afterFlush: () => void;
  #scheduled = false;

  /** `send` hands one ACK to the transport; `afterFlush` runs after each scheduled flush. */
  constructor(send: (stream: K, ack: GroupAck<S>) => void, afterFlush: () => void) {
    this.#send = send;
    this.#afterFlush = afterFlush;
  }

  /** Streams with an ACK not yet sent. */
  get pending(): number {
    return this.#pending.size;
  }

  /** Input of `stream` up to `count` is committed; it is acknowledged before this tick ends. */
  add(stream: K, count: bigint, mappings: readonly StreamMapping[], introduced: readonly S[]): void {
    const pending = this.#pending.get(stream);
    if (pending === undefined) {
      this.#pending.set(stream, { count, mappings: [...mappings], introduced: [...introduced] });
    } else {
      if (count > pending.count) pending.count = count;
      pending.mappings.push(...mappings);
      pending.introduced.push(...introduced);
    }
    if (this.#scheduled) return;
    this.#scheduled = true;
    process.nextTick(() => {
      this.#scheduled = false;
      for (const waiting of [...this.#pending.keys()]) this.flush(waiting);
      this.#afterFlush();
    });
  }

  /** Sends the stream's pending ACK now (if any). */
  flush(stream: K): void {
    const pending = this.#pending.get(stream);
    if (pending === undefined) return;
    this.#pending.delete(stream);
    this.#send(stream, pending);
  }
}

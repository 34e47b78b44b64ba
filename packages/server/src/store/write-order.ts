/**
 * The order a group commit writes its writes in, shared by the stores that
 * write runs of appends (the SQLite store; @golem-stream/store-postgres).
 *
 * A run is consecutive appends of one stream written together (one count
 * update, one statement or savepoint). A round-trip method interleaves two
 * streams in every group (input item, output item, input item, ...), so
 * runs are taken per stream across a stretch of appends: appends of
 * different streams touch different rows (their stream's count, their own
 * log rows), so writing one stream's before another's changes nothing, and
 * each stream's appends keep their order. Any other write is a barrier.
 *
 * Pure functions: writes in, order out.
 */

/** What ordering needs of an append (a write that is not one is `undefined`). */
export interface OrderedAppend {
  readonly log: "input" | "output";
  readonly streamId: string;
  readonly sequence: bigint;
  readonly itemCount: bigint;
}

/**
 * The order to write a group in, as indexes into it: each stretch of
 * appends with the appends of one stream together, streams in the order
 * they first appear; every other write where it was.
 */
export function writeOrder(appends: readonly (OrderedAppend | undefined)[]): number[] {
  const order: number[] = [];
  let at = 0;
  while (at < appends.length) {
    if (appends[at] === undefined) {
      order.push(at++);
      continue;
    }
    let end = at;
    // Per log, by stream id: no key string made per append (this runs for every item).
    const input = new Map<string, number[]>();
    const output = new Map<string, number[]>();
    const streams: number[][] = [];
    for (; end < appends.length; end++) {
      const append = appends[end];
      if (append === undefined) break;
      const byStream = append.log === "input" ? input : output;
      const indexes = byStream.get(append.streamId);
      if (indexes !== undefined) indexes.push(end);
      else {
        const first = [end];
        byStream.set(append.streamId, first);
        streams.push(first);
      }
    }
    for (const indexes of streams) for (const index of indexes) order.push(index);
    at = end;
  }
  return order;
}

/** Whether `next` appends to the same log of the same stream right where `previous` ends. */
export function continuesRun(previous: OrderedAppend, next: OrderedAppend | undefined): next is OrderedAppend {
  return (
    next !== undefined &&
    next.log === previous.log &&
    next.streamId === previous.streamId &&
    next.sequence === previous.sequence + previous.itemCount
  );
}

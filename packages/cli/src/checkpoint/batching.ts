/**
 * How often cursor-only progress reaches the checkpoint file. Protocol
 * section 13 lets a crash replay output, never skip it, so the file may lag
 * behind stdout: a write happens when either bound is reached, and always
 * at the end of a run. Kept apart from the sink so `--help` loads nothing else.
 */
export interface CheckpointBatching {
  /** At most this long between a delivered item and the file that records it, ms. Default 100; 0 writes after every item. */
  readonly intervalMs: number;
  /** At most this many delivered items not yet in the file. Default 1000; 1 writes after every item. */
  readonly maxItems: number;
}

export const DEFAULT_CHECKPOINT_BATCHING: CheckpointBatching = { intervalMs: 100, maxItems: 1000 };

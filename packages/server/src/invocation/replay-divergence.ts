/**
 * Non-determinism found by a re-run (docs/durable-execution.md): the method
 * produced other output, another result or another journal step than the
 * run whose effects are stored. The invocation fails with this message as
 * its public outcome message; what was delivered stays delivered.
 */
export const REPLAY_DIVERGED = "the method produced different output when it was re-run (non-deterministic)";

export class ReplayDivergence extends Error {
  override readonly name = "ReplayDivergence";

  /** `detail` is for the server's log only (which stream, which item); the client sees `REPLAY_DIVERGED`. */
  constructor(readonly detail: string) {
    super(REPLAY_DIVERGED);
  }
}

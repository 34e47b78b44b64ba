/**
 * Per-principal counts of something held (open connections, running
 * sessions) with a bound, so one token holder cannot take what the server
 * has for everyone. A principal is the authenticator's `account` and
 * `principal` together. Only principals holding at least one slot are
 * remembered, so the table is bounded by what is held.
 *
 * Reaching the bound is `overloaded` (retryable, HTTP 503 before an upgrade):
 * the count goes down as the principal's own connections close or its
 * invocations finish, so a later attempt may succeed (docs/protocol/server.md,
 * "Per-principal bounds").
 */
import { ProtocolError } from "@golem-stream/wire";
import type { Principal } from "../options.js";

/** Which per-principal bound was reached. */
export type { PrincipalLimit } from "../observability/server-observer.js";
import type { PrincipalLimit } from "../observability/server-observer.js";
import type { RerunSlots } from "../sessions/reruns.js";

/** One held slot; `release` is idempotent. */
export interface PrincipalSlot {
  release(): void;
}

/** The bounds slots count (stored bytes are counted by `StoredBytesTable`). */
type SlotLimit = Exclude<PrincipalLimit, "stored-bytes">;

export class PrincipalSlots implements RerunSlots {
  readonly #limit: number;
  readonly #what: SlotLimit;
  readonly #held = new Map<string, number>();
  readonly #reached: (limit: PrincipalLimit) => void;

  /** `reached` is told of every refusal (metrics and logs). */
  constructor(limit: number, what: SlotLimit, reached: (limit: PrincipalLimit) => void) {
    this.#limit = limit;
    this.#what = what;
    this.#reached = reached;
  }

  /** Slots `caller` holds now. */
  heldBy(caller: Principal): number {
    return this.#held.get(keyOf(caller)) ?? 0;
  }

  /** Takes a slot for `caller`, or throws `overloaded` when it holds the limit already. */
  acquire(caller: Principal): PrincipalSlot {
    const key = keyOf(caller);
    const held = this.#held.get(key) ?? 0;
    if (held >= this.#limit) {
      this.#reached(this.#what);
      throw new ProtocolError("overloaded", REFUSALS[this.#what](this.#limit));
    }
    return this.#take(key);
  }

  /**
   * Takes a slot for `caller` even when it holds the limit already: for work
   * the principal was admitted for before (a re-run of an interrupted
   * invocation), which refusing would fail. It still counts, so new work
   * waits until the principal is back under its bound.
   */
  hold(caller: Principal): PrincipalSlot {
    return this.#take(keyOf(caller));
  }

  #take(key: string): PrincipalSlot {
    this.#held.set(key, (this.#held.get(key) ?? 0) + 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        const now = (this.#held.get(key) ?? 1) - 1;
        if (now === 0) this.#held.delete(key);
        else this.#held.set(key, now);
      },
    };
  }
}

const REFUSALS: Record<SlotLimit, (limit: number) => string> = {
  connections: (limit) => `this caller already has ${limit} connections open to this server; close one, or retry later`,
  sessions: (limit) => `this caller already runs ${limit} invocations on this server; retry when one has finished`,
};

/** Unambiguous: the account cannot contain the separator's escape. */
function keyOf(caller: Principal): string {
  return JSON.stringify([caller.account, caller.principal]);
}

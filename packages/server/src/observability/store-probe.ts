/**
 * Whether the store answers, for `/readyz` and `SessionServer.readiness()`:
 * one round trip (the store's `ping`, or a read of a session no one has)
 * bounded by a timeout, and shared by every probe within a second, so
 * probes, scrapers and anyone who can reach `/readyz` cost the store one
 * query, in flight or recent.
 */
import type { SessionStore } from "../store/session-store.js";

/** How long one store check answers. */
const READINESS_CACHE_MS = 1000;
/** Read by readiness when the store has no `ping`: no session has this id. */
const NO_SESSION = "00000000-0000-0000-0000-000000000000";

export class StoreProbe {
  readonly #store: SessionStore;
  readonly #timeoutMs: number;
  readonly #now: () => number;
  /** The last check and when it started. */
  #last: { readonly at: number; readonly reachable: Promise<boolean> } | undefined;

  /** `timeoutMs`: how long a check waits before answering unreachable; `now`: ms since the epoch. */
  constructor(store: SessionStore, timeoutMs: number, now: () => number) {
    this.#store = store;
    this.#timeoutMs = timeoutMs;
    this.#now = now;
  }

  /** Whether the store answers, asked at most once per `READINESS_CACHE_MS`. */
  reachable(): Promise<boolean> {
    const now = this.#now();
    const last = this.#last;
    if (last !== undefined && now - last.at < READINESS_CACHE_MS && now >= last.at) return last.reachable;
    const store = this.#store;
    let timer: NodeJS.Timeout | undefined;
    const reachable = Promise.race([
      (store.ping !== undefined ? store.ping() : store.getSession(NO_SESSION)).then(
        () => true,
        () => false,
      ),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), this.#timeoutMs))),
    ]).finally(() => clearTimeout(timer));
    this.#last = { at: now, reachable };
    return reachable;
  }
}

/**
 * The grace a store gives itself when its database is unavailable for a
 * while (a PostgreSQL restart or failover, a cut network, SQLite's busy or
 * I/O errors): work that needs the store waits, retried with backoff, instead
 * of failing the invocation at the first error (docs/operations.md, *Store
 * outages*).
 *
 * One `OutageGrace` follows one sequence of work that must stay in order (a
 * store's writer): the outage starts at its first failure and ends at its
 * next success. While the outage is younger than the grace, `retry` waits
 * (100 ms, doubling up to 2 s, never past the grace) and says to try again;
 * once it is older, `retry` says to give up, and keeps saying so at once for
 * every later failure until a success ends the outage: work queued behind a
 * failed write fails fast rather than each waiting a grace of its own.
 *
 * The clock and the waits are injected (tests move time themselves).
 */

/** What a store reports of its outages (the server makes a metric and a log line of each). */
export type StoreOutageEvent =
  /** The first failure of an outage: work waits from now on. */
  | { readonly kind: "unavailable"; readonly error: string }
  /** Work is about to be tried again (after `delayMs`). */
  | { readonly kind: "retry"; readonly error: string; readonly delayMs: number }
  /** The store answered again after an outage of `seconds`. */
  | { readonly kind: "available"; readonly seconds: number }
  /** The outage outlasted the grace: `writes` writes failed (their invocations fail) after `seconds`. */
  | { readonly kind: "grace-exceeded"; readonly seconds: number; readonly writes: number; readonly error: string };

export type StoreOutageListener = (event: StoreOutageEvent) => void;

/** 30 s: a PostgreSQL restart or a managed failover fits; an outage longer than that is reported, not hidden. */
export const DEFAULT_STORE_OUTAGE_GRACE_MS = 30_000;

/** The clock of an `OutageGrace`: milliseconds, and a wait. */
export interface OutageClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const SYSTEM_OUTAGE_CLOCK: OutageClock = {
  now: () => performance.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

const FIRST_DELAY_MS = 100;
const MAX_DELAY_MS = 2000;

/** Checks a grace given as an option: a non-negative integer of milliseconds (0: no retries). */
export function checkOutageGraceMs(value: unknown, name = "outageGraceMs"): number {
  if (value === undefined) return DEFAULT_STORE_OUTAGE_GRACE_MS;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new TypeError(`${name} must be a non-negative integer of milliseconds, got ${String(value)}`);
  }
  return value;
}

export class OutageGrace {
  readonly graceMs: number;
  readonly #clock: OutageClock;
  readonly #listener: () => StoreOutageListener | undefined;
  /** When the current outage started (by the clock), if there is one. */
  #since: number | undefined;
  #delayMs = FIRST_DELAY_MS;
  #exceeded = false;
  #lastError = "";

  /** `listener` is read at each event, so a store can take its observer after it was built. */
  constructor(
    graceMs: number,
    clock: OutageClock = SYSTEM_OUTAGE_CLOCK,
    listener: () => StoreOutageListener | undefined = () => undefined,
  ) {
    this.graceMs = checkOutageGraceMs(graceMs);
    this.#clock = clock;
    this.#listener = listener;
  }

  /** Whether an outage is under way (a failure not yet followed by a success). */
  get down(): boolean {
    return this.#since !== undefined;
  }

  /**
   * Work failed because the store was unavailable. Resolves true after the
   * backoff delay (try again), or false at once when the grace is spent
   * (fail the work, then call `exceeded`).
   */
  async retry(error: unknown): Promise<boolean> {
    const now = this.#clock.now();
    this.#lastError = describe(error);
    if (this.#since === undefined) {
      this.#since = now;
      this.#delayMs = FIRST_DELAY_MS;
      this.#emit({ kind: "unavailable", error: this.#lastError });
    }
    const left = this.#since + this.graceMs - now;
    if (this.#exceeded || left <= 0) return false;
    const delayMs = Math.max(1, Math.min(this.#delayMs, left));
    this.#delayMs = Math.min(this.#delayMs * 2, MAX_DELAY_MS);
    this.#emit({ kind: "retry", error: this.#lastError, delayMs });
    await this.#clock.sleep(delayMs);
    return true;
  }

  /** `writes` writes failed past the grace: reported once per call (a metric and a log line). */
  exceeded(writes: number): void {
    this.#exceeded = true;
    const seconds = this.#since === undefined ? 0 : (this.#clock.now() - this.#since) / 1000;
    if (writes > 0) this.#emit({ kind: "grace-exceeded", seconds, writes, error: this.#lastError });
  }

  /** The store answered: an outage under way is over, and the next failure starts a new grace. */
  available(): void {
    if (this.#since === undefined) return;
    const seconds = (this.#clock.now() - this.#since) / 1000;
    this.#since = undefined;
    this.#exceeded = false;
    this.#emit({ kind: "available", seconds });
  }

  #emit(event: StoreOutageEvent): void {
    try {
      this.#listener()?.(event);
    } catch {
      // An observer's mistake must not change what the store does.
    }
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) return error.message || (error as { code?: string }).code || error.name;
  return String(error);
}

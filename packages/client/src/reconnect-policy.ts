/**
 * How long to wait before the next connection attempt, and when to give up.
 * Pure: the random source is injected so tests and benchmarks are
 * deterministic.
 *
 * The budget counts attempts *without progress*, not attempts since the last
 * acceptance: a server that accepts and then rejects retryably (or drops the
 * connection) at once would otherwise be re-attached hundreds of times a
 * second, forever. Progress is what the invocation gained from the server —
 * an input item (or terminal) newly acknowledged, an output item, terminal or
 * result received for the first time — or an accepted connection that stayed
 * up for `stableAfterMs`, so a long, quiet invocation survives any number of
 * well-spaced network failures. Until progress is made the delay keeps
 * growing across acceptances, and after `maxAttempts` retries without
 * progress the invocation fails with `connection-lost`.
 *
 * "Full jitter" (a uniform delay between 0 and the exponential ceiling)
 * spreads reconnect storms when a server restarts under many clients.
 */
import { ClientError } from "./errors.js";

/**
 * `ClientOptions.reconnect`: the backoff between connection attempts and the budget of attempts
 * without progress. Every field is optional (defaults in `DEFAULT_RECONNECT_POLICY`); an unusable
 * value, or a field that is not one of these, throws `invalid-argument` from `createClient`.
 */
export interface ReconnectPolicy {
  /** Ceiling of the first delay, ms. Default 100. */
  readonly initialDelayMs?: number;
  /** Upper bound of every delay, ms. Default 5000. */
  readonly maxDelayMs?: number;
  /** Growth of the ceiling per retry without progress. Default 2. */
  readonly multiplier?: number;
  /**
   * Retries without progress before the invocation fails with `connection-lost`
   * (so at most `maxAttempts + 1` connections between two signs of progress).
   * The count resets only on progress, never on a mere acceptance.
   * Default 10; 0 disables reconnecting.
   */
  readonly maxAttempts?: number;
  /**
   * An accepted connection that stays open this long counts as progress
   * (resetting the count and the delay), even if nothing moved on it: a long
   * invocation that is quietly computing is healthy. Default 30 000 ms.
   */
  readonly stableAfterMs?: number;
  /** Random source in [0, 1). Default `Math.random`. */
  readonly random?: () => number;
}

/** The default of every `ReconnectPolicy` field; spread it to change a few (`{ ...DEFAULT_RECONNECT_POLICY, maxAttempts: 20 }`). */
export const DEFAULT_RECONNECT_POLICY = {
  initialDelayMs: 100,
  maxDelayMs: 5_000,
  multiplier: 2,
  maxAttempts: 10,
  stableAfterMs: 30_000,
  random: Math.random,
} as const satisfies Required<ReconnectPolicy>;

/** The policy with its defaults filled in; an unusable value throws `invalid-argument` before any I/O. */
export function resolvePolicy(policy: ReconnectPolicy | undefined): Required<ReconnectPolicy> {
  if (policy !== undefined && (typeof policy !== "object" || policy === null))
    throw new ClientError("invalid-argument", "reconnect must be an object");
  const resolved: Required<ReconnectPolicy> = { ...DEFAULT_RECONNECT_POLICY };
  for (const [key, value] of Object.entries(policy ?? {})) {
    if (value === undefined) continue;
    if (!(key in DEFAULT_RECONNECT_POLICY)) throw new ClientError("invalid-argument", `reconnect.${key} is not an option`);
    (resolved as Record<string, unknown>)[key] = value;
  }
  const bad = (name: string, rule: string): ClientError => new ClientError("invalid-argument", `reconnect.${name} must be ${rule}`);
  for (const name of ["initialDelayMs", "maxDelayMs", "stableAfterMs"] as const) {
    if (!isNonNegative(resolved[name])) throw bad(name, "a finite number ≥ 0");
  }
  // Beyond this, setTimeout fires at once: a huge cap would become no wait at all.
  if (resolved.maxDelayMs > 2 ** 31 - 1) throw bad("maxDelayMs", "at most 2147483647");
  if (!isNonNegative(resolved.multiplier) || resolved.multiplier < 1) throw bad("multiplier", "a finite number ≥ 1");
  if (!Number.isSafeInteger(resolved.maxAttempts) || resolved.maxAttempts < 0) throw bad("maxAttempts", "an integer ≥ 0");
  if (typeof resolved.random !== "function") throw bad("random", "a function");
  return resolved;
}

function isNonNegative(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0;
}

/**
 * Delay before retry number `failures` (1 for the first retry since the last
 * progress), or `undefined` when the policy is exhausted.
 */
export function reconnectDelay(policy: Required<ReconnectPolicy>, failures: number): number | undefined {
  if (failures > policy.maxAttempts) return undefined;
  const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.multiplier ** Math.max(0, failures - 1));
  return Math.floor(policy.random() * ceiling);
}

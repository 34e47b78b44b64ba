/**
 * How long to wait before the next connection attempt. Pure: the random
 * source is injected so tests and benchmarks are deterministic.
 *
 * "Full jitter" (a uniform delay between 0 and the exponential ceiling)
 * spreads reconnect storms when a server restarts under many clients.
 */
export interface ReconnectPolicy {
  /** Ceiling of the first delay, ms. Default 100. */
  readonly initialDelayMs?: number;
  /** Upper bound of every delay, ms. Default 5000. */
  readonly maxDelayMs?: number;
  /** Growth of the ceiling per consecutive failure. Default 2. */
  readonly multiplier?: number;
  /**
   * Consecutive failed connection attempts before the invocation fails with
   * `connection-lost`. The count resets whenever the server accepts an attach.
   * Default 10; 0 disables reconnecting.
   */
  readonly maxAttempts?: number;
  /** Random source in [0, 1). Default `Math.random`. */
  readonly random?: () => number;
}

export const DEFAULT_RECONNECT_POLICY = {
  initialDelayMs: 100,
  maxDelayMs: 5_000,
  multiplier: 2,
  maxAttempts: 10,
  random: Math.random,
} as const satisfies Required<ReconnectPolicy>;

export function resolvePolicy(policy: ReconnectPolicy | undefined): Required<ReconnectPolicy> {
  return { ...DEFAULT_RECONNECT_POLICY, ...policy };
}

/**
 * Delay before retry number `failures` (1 for the first retry after one
 * failure), or `undefined` when the policy is exhausted.
 */
export function reconnectDelay(policy: Required<ReconnectPolicy>, failures: number): number | undefined {
  if (failures > policy.maxAttempts) return undefined;
  const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.multiplier ** Math.max(0, failures - 1));
  return Math.floor(policy.random() * ceiling);
}

/**
 * Failed authentications per client address, so that guessing bearer tokens
 * (or flooding the server with upgrades it must authenticate and refuse)
 * costs the guesser, not everyone: once an address has failed
 * `maxFailures` times within `windowMs`, its further requests are refused
 * with `overloaded` (HTTP 503, retryable later) before the authenticator
 * runs, until its window ends.
 *
 * The table is bounded: at most `maxAddresses` addresses are remembered (so a
 * flood from many addresses costs memory of `maxAddresses` entries, never
 * more). When it is full, an address still below its allowance is forgotten
 * first, the least recently failed of them; a throttled address only when
 * every remembered one is throttled, the earliest throttled first. Otherwise
 * an attacker failing once from each of `maxAddresses` addresses would push
 * every throttled address out within seconds, and a guesser from one address
 * would get its allowance again each time. IPv6 addresses are counted per /64
 * prefix, the block one host usually owns.
 *
 * Authentications of one address run at most as many at once as it has
 * failures left (`admit`); the rest wait their turn. Counting failures only
 * once each authentication ends would let a burst of guesses sent at once
 * all reach the authenticator before the first failure was counted.
 *
 * Keyed by the TCP peer address: behind a reverse proxy every client shares
 * the proxy's address, so one client's failures would throttle everyone;
 * turn the throttle off there (`limits.authFailuresPerAddress: 0`) and
 * throttle at the proxy.
 */
import { isIPv6 } from "node:net";
import { ProtocolError } from "@golem-stream/wire";
import { CredentialMissing } from "./credential-missing.js";

export interface AuthThrottleSettings {
  /** Failures an address may have in one window (0: no throttle). */
  readonly maxFailures: number;
  readonly windowMs: number;
  readonly maxAddresses: number;
}

interface Failures {
  windowStart: number;
  count: number;
}

/**
 * One admitted authentication: `settled()` once it succeeds, `settled(error)` once it fails with
 * `error`, which counts as a failed authentication of its address when it refused the credential
 * (`unauthenticated`), not when there was none (`CredentialMissing`).
 */
export interface AuthAdmission {
  settled(error?: unknown): void;
}

/** Authentications of one address under way, and those waiting for one of them to end. */
interface InFlight {
  running: number;
  readonly waiting: (() => void)[];
}

const UNTHROTTLED: AuthAdmission = { settled: () => undefined };

/**
 * Authentications of one address that may wait for their turn; more are refused `overloaded` at
 * once. Each holds an upgraded socket, or a request, while it waits: a flood from one address
 * must not hold an unbounded number.
 */
export const MAX_WAITING_AUTHENTICATIONS = 1024;

export class AuthThrottle {
  readonly #settings: AuthThrottleSettings;
  readonly #now: () => number;
  /** Addresses below their allowance, in order of last failure (Map keeps insertion order; a failure re-inserts). */
  readonly #counting = new Map<string, Failures>();
  /** Addresses at their allowance, in the order they reached it. */
  readonly #throttled = new Map<string, Failures>();

  constructor(settings: AuthThrottleSettings, now: () => number) {
    this.#settings = settings;
    this.#now = now;
  }

  /** Authentications under way per address key (only while some are). */
  readonly #inFlight = new Map<string, InFlight>();

  /** Addresses remembered now (at most `maxAddresses`). */
  get size(): number {
    return this.#counting.size + this.#throttled.size;
  }

  /** Throws `overloaded` when `address` failed too often in its current window. */
  check(address: string | undefined): void {
    if (this.#settings.maxFailures === 0 || address === undefined) return;
    const entry = this.#current(keyOf(address));
    if (entry !== undefined && entry.count >= this.#settings.maxFailures) {
      throw new ProtocolError("overloaded", "too many failed authentications from this address; try again later");
    }
  }

  /**
   * Waits until `address` may run one more authentication: while as many of
   * its authentications are under way as it has failures left in its window
   * (at least one), the next waits for one of them to end. Throws
   * `overloaded`, as `check`, when the address is throttled, now or by the
   * time its turn comes. A successful authentication frees its turn and
   * counts nothing, so a burst of good requests from one address waits only
   * for the ones before it.
   */
  async admit(address: string | undefined): Promise<AuthAdmission> {
    if (this.#settings.maxFailures === 0 || address === undefined) return UNTHROTTLED;
    const key = keyOf(address);
    this.check(address);
    let flight = this.#inFlight.get(key);
    if (flight === undefined) {
      flight = { running: 0, waiting: [] };
      this.#inFlight.set(key, flight);
    }
    const admitted = flight;
    if (admitted.running < this.#allowance(key)) {
      admitted.running++;
    } else {
      if (admitted.waiting.length >= MAX_WAITING_AUTHENTICATIONS) {
        throw new ProtocolError("overloaded", "too many authentications from this address at once; try again later");
      }
      // Woken with the turn of one that ended: `running` already counts this one.
      await new Promise<void>((resolve) => admitted.waiting.push(resolve));
      try {
        this.check(address);
      } catch (error) {
        // Refused in its turn: the turn goes on to the next one waiting.
        this.#release(key, admitted);
        throw error;
      }
    }
    let settled = false;
    return {
      settled: (error) => {
        if (settled) return;
        settled = true;
        // A request with no credential guessed nothing (credential-missing.ts): not a failure of its address.
        if (error instanceof ProtocolError && error.code === "unauthenticated" && !(error instanceof CredentialMissing))
          this.failed(address);
        this.#release(key, admitted);
      },
    };
  }

  /** How many authentications of the address may run at once: its failures left, at least one. */
  #allowance(key: string): number {
    return Math.max(1, this.#settings.maxFailures - (this.#current(key)?.count ?? 0));
  }

  /**
   * An authentication ended: its turn goes straight to the next one waiting, unless more run
   * than the address's allowance now allows (failures meanwhile). Handed over, not freed and
   * taken again, so no new arrival can slip in between, and the flight stays in the table for as
   * long as anything runs or waits in it.
   */
  #release(key: string, flight: InFlight): void {
    if (flight.waiting.length > 0 && flight.running <= this.#allowance(key)) {
      flight.waiting.shift()!();
      return;
    }
    flight.running--;
    if (flight.running === 0 && flight.waiting.length === 0 && this.#inFlight.get(key) === flight) this.#inFlight.delete(key);
  }

  /** Counts one failed authentication of `address`. */
  failed(address: string | undefined): void {
    if (this.#settings.maxFailures === 0 || address === undefined) return;
    const key = keyOf(address);
    const entry = this.#current(key) ?? { windowStart: this.#now(), count: 0 };
    entry.count += 1;
    // Re-inserted: counting addresses in order of last failure. A throttled one keeps its place
    // (set on a present key), also when a request that passed the check before fails after it.
    this.#counting.delete(key);
    (entry.count >= this.#settings.maxFailures ? this.#throttled : this.#counting).set(key, entry);
    if (this.size > this.#settings.maxAddresses) {
      this.#forgetEndedThrottles();
      if (this.size <= this.#settings.maxAddresses) return;
      const from = this.#counting.size > 0 ? this.#counting : this.#throttled;
      const oldest = from.keys().next().value;
      if (oldest !== undefined) from.delete(oldest);
    }
  }

  /** Drops throttled addresses whose window has ended from the front of their table (roughly the order windows end). */
  #forgetEndedThrottles(): void {
    const now = this.#now();
    for (const [key, entry] of this.#throttled) {
      if (now - entry.windowStart < this.#settings.windowMs) return;
      this.#throttled.delete(key);
    }
  }

  /** The address's entry if its window has not ended (an ended one is forgotten). */
  #current(key: string): Failures | undefined {
    const entry = this.#counting.get(key) ?? this.#throttled.get(key);
    if (entry === undefined) return undefined;
    if (this.#now() - entry.windowStart < this.#settings.windowMs) return entry;
    this.#counting.delete(key);
    this.#throttled.delete(key);
    return undefined;
  }
}

/** The table's key of an address: IPv4 (also IPv4-mapped) as it is, IPv6 by its /64 prefix. */
export function keyOf(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped !== null) return mapped[1]!;
  if (!isIPv6(address)) return address;
  const [head = "", tail = ""] = address.toLowerCase().split("::");
  const headGroups = head === "" ? [] : head.split(":");
  const tailGroups = address.includes("::") ? (tail === "" ? [] : tail.split(":")) : [];
  const groups = address.includes("::")
    ? [...headGroups, ...Array<string>(8 - headGroups.length - tailGroups.length).fill("0"), ...tailGroups]
    : headGroups;
  return `${groups
    .slice(0, 4)
    .map((group) => group.replace(/^0+(?=.)/, ""))
    .join(":")}::/64`;
}

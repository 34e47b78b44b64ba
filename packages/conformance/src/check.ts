/** What a conformance check is, and how it states what it saw when it fails. */
import type { SuiteContext } from "./context.js";

/** Sections of the suite, for `--only` / `--skip`. */
export const SECTIONS = [
  "handshake",
  "first-message",
  "decoding",
  "schema",
  "methods",
  "channels",
  "idempotency",
  "resume",
  "revocation",
  "cancel",
  "limits",
  "liveness",
  "backpressure",
  "restart",
] as const;
export type Section = (typeof SECTIONS)[number];

/**
 * Settings of the server under test that the protocol leaves to it (it may
 * enforce them with other values, or not at all): a check that needs one runs
 * only when the suite is told the server's value, and is skipped otherwise.
 */
export type ServerSetting = "firstMessageTimeoutMs" | "pingIntervalMs" | "maxConnectionsPerPrincipal" | "maxRunningSessionsPerPrincipal";

export interface Check {
  /** Stable id, `<section>.<name>`. */
  readonly id: string;
  readonly section: Section;
  /** The protocol section or decision verified, e.g. "§6.6" or "decisions §8". */
  readonly ref: string;
  /** What a conforming server does, in one sentence. */
  readonly expectation: string;
  /** The server setting the check needs to know; without it the check is skipped. */
  readonly needs?: ServerSetting;
  /**
   * Runs only when the suite is told the server continues what a restart interrupted
   * (`durableRestart`, `--durable-restart`): it calls the project's `journal` demo method,
   * which decisions-v1 section 7 does not list. Skipped otherwise.
   */
  readonly durable?: true;
  /** Returns a short description of what was seen; throws `Mismatch` (or any error) on failure. */
  run(ctx: SuiteContext): Promise<string | void>;
}

/** A failed expectation; its message is what the check saw. */
export class Mismatch extends Error {}

export function ensure(condition: boolean, saw: string): asserts condition {
  if (!condition) throw new Mismatch(saw);
}

export function show(value: unknown): string {
  const text = JSON.stringify(value, (_key, v: unknown) => (typeof v === "bigint" ? v.toString() : v));
  return text === undefined ? String(value) : text.length > 400 ? `${text.slice(0, 400)}…` : text;
}

/** JSON text with object members sorted: equality that ignores member order, as receivers must (section 2). */
function normalized(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === "bigint") return v.toString();
    if (v !== null && typeof v === "object" && !Array.isArray(v) && !ArrayBuffer.isView(v)) {
      return Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    }
    return v;
  }) ?? String(value);
}

export function ensureEqual(actual: unknown, expected: unknown, what: string): void {
  if (normalized(actual) !== normalized(expected)) throw new Mismatch(`${what}: expected ${show(expected)}, saw ${show(actual)}`);
}

export type CheckSpec = Omit<Check, "section" | "id"> & { readonly name: string };

export function defineChecks(section: Section, checks: readonly CheckSpec[]): Check[] {
  return checks.map(({ name, ...rest }) => ({ ...rest, id: `${section}.${name}`, section }));
}

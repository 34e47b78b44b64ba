/** What a conformance check is; how it states what it saw when it fails is ensure.ts's (re-exported here). */
import type { ServerSetting, SuiteContext } from "./context.js";

// What checks throw and how they show values, and the settings a check may need: imported from here by every check.
export { Mismatch, ensure, ensureEqual, show } from "./ensure.js";
export type { ServerSetting } from "./context.js";

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
  "authorization",
  "liveness",
  "backpressure",
  "restart",
] as const;
export type Section = (typeof SECTIONS)[number];

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
  /**
   * Needs the token of a second principal (`otherPrincipalToken`, `--other-principal-token`):
   * skipped without it.
   */
  readonly otherPrincipal?: true;
  /** Returns a short description of what was seen; throws `Mismatch` (or any error) on failure. */
  run(ctx: SuiteContext): Promise<string | void>;
}

export type CheckSpec = Omit<Check, "section" | "id"> & { readonly name: string };

export function defineChecks(section: Section, checks: readonly CheckSpec[]): Check[] {
  return checks.map(({ name, ...rest }) => ({ ...rest, id: `${section}.${name}`, section }));
}

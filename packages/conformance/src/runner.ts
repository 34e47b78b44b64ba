/** Runs checks against a server and collects one result per check. */
import { Mismatch, SECTIONS, type Check, type Section } from "./check.js";
import { SuiteContext, type SuiteOptions } from "./context.js";
import { serverChecks } from "./suite.js";

export type Status = "passed" | "failed" | "skipped";

export interface CheckResult {
  readonly id: string;
  readonly section: Section;
  readonly ref: string;
  readonly expectation: string;
  readonly status: Status;
  /** What the check saw: a short summary when it passed, the mismatch when it failed, the reason when skipped. */
  readonly saw: string;
  readonly durationMs: number;
}

export interface SuiteReport {
  readonly url: string;
  readonly results: readonly CheckResult[];
  readonly passed: number;
  readonly failed: number;
  readonly skipped: number;
  readonly durationMs: number;
}

export interface RunOptions extends SuiteOptions {
  /** Sections or check ids to run (default: all). */
  readonly only?: readonly string[];
  /** Sections or check ids to leave out. */
  readonly skip?: readonly string[];
  /** Checks run at once, except the restart section, which always runs alone and last (default 4). */
  readonly concurrency?: number;
  /** Hard deadline of one check, in ms (default 60 000). */
  readonly checkTimeoutMs?: number;
  /** Called as each check finishes. */
  readonly onResult?: (result: CheckResult) => void;
  /** The checks to choose from (default: the whole server suite). */
  readonly checks?: readonly Check[];
}

function matches(check: Check, selectors: readonly string[]): boolean {
  return selectors.some((s) => s === check.section || s === check.id);
}

/** Throws for a selector that names neither a section nor a check. */
export function validateSelectors(selectors: readonly string[], checks: readonly Check[]): void {
  for (const s of selectors) {
    if (!(SECTIONS as readonly string[]).includes(s) && !checks.some((c) => c.id === s)) {
      throw new Error(`unknown section or check ${JSON.stringify(s)}; sections: ${SECTIONS.join(", ")}`);
    }
  }
}

async function runOne(check: Check, options: RunOptions): Promise<CheckResult> {
  const ctx = new SuiteContext(options);
  const started = Date.now();
  const base = { id: check.id, section: check.section, ref: check.ref, expectation: check.expectation };
  if (check.section === "restart" && options.restartCmd === undefined) {
    return { ...base, status: "skipped", saw: "no --restart-cmd given", durationMs: 0 };
  }
  const limit = options.checkTimeoutMs ?? 60_000;
  let timer: NodeJS.Timeout | undefined;
  try {
    const saw = await Promise.race([
      check.run(ctx),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the check did not finish within ${limit} ms`)), limit);
      }),
    ]);
    return { ...base, status: "passed", saw: saw ?? "as expected", durationMs: Date.now() - started };
  } catch (error) {
    const saw = error instanceof Mismatch ? error.message : `${error instanceof Error ? error.message : String(error)}`;
    return { ...base, status: "failed", saw, durationMs: Date.now() - started };
  } finally {
    clearTimeout(timer);
    ctx.cleanup();
  }
}

async function runPool(checks: readonly Check[], options: RunOptions, concurrency: number, into: Map<Check, CheckResult>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < checks.length) {
      const check = checks[next++]!;
      const result = await runOne(check, options);
      into.set(check, result);
      options.onResult?.(result);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, checks.length)) }, worker));
}

/** Runs the selected checks and returns their results in suite order. */
export async function runServerSuite(options: RunOptions): Promise<SuiteReport> {
  const all = options.checks ?? serverChecks();
  validateSelectors([...(options.only ?? []), ...(options.skip ?? [])], all);
  const selected = all.filter((c) => (options.only === undefined || options.only.length === 0 || matches(c, options.only)) && !matches(c, options.skip ?? []));
  const started = Date.now();
  const results = new Map<Check, CheckResult>();
  await runPool(selected.filter((c) => c.section !== "restart"), options, options.concurrency ?? 4, results);
  await runPool(selected.filter((c) => c.section === "restart"), options, 1, results);
  const ordered = selected.map((c) => results.get(c)!);
  return {
    url: options.url,
    results: ordered,
    passed: ordered.filter((r) => r.status === "passed").length,
    failed: ordered.filter((r) => r.status === "failed").length,
    skipped: ordered.filter((r) => r.status === "skipped").length,
    durationMs: Date.now() - started,
  };
}

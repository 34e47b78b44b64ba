/**
 * The part of running a suite that does not depend on what is under test:
 * selection by `--only`/`--skip`, a pool of concurrent checks, a hard
 * deadline per check, one result per check. The server suite (runner.ts) and
 * the client suite (client/runner.ts) each supply their checks and a fresh
 * context per check.
 */
import { Mismatch } from "./check.js";

export type Status = "passed" | "failed" | "skipped";

/** What both suites' checks and scenarios have in common. */
export interface RunnableCheck<Ctx> {
  readonly id: string;
  readonly section: string;
  readonly ref: string;
  readonly expectation: string;
  run(ctx: Ctx): Promise<string | void>;
}

export interface CheckResult {
  readonly id: string;
  readonly section: string;
  readonly ref: string;
  readonly expectation: string;
  readonly status: Status;
  /** What the check saw: a short summary when it passed, the mismatch when it failed, the reason when skipped. */
  readonly saw: string;
  readonly durationMs: number;
}

/** The results of one run, whatever the suite. */
export interface BaseReport {
  /** Which suite ran. */
  readonly suite: "server" | "client";
  /** What was under test: the server's URL, or the adapter command. */
  readonly target: string;
  readonly results: readonly CheckResult[];
  readonly passed: number;
  readonly failed: number;
  readonly skipped: number;
  readonly durationMs: number;
}

export interface PoolOptions<Ctx> {
  readonly concurrency: number;
  readonly checkTimeoutMs: number;
  readonly onResult?: ((result: CheckResult) => void) | undefined;
  /** A fresh context for one check, disposed of after it. */
  readonly context: () => { ctx: Ctx; dispose: () => void | Promise<void> };
  /** A reason to skip the check without running it, if any. */
  readonly skipReason?: (check: RunnableCheck<Ctx>) => string | undefined;
}

function matches(check: RunnableCheck<unknown>, selectors: readonly string[]): boolean {
  return selectors.some((s) => s === check.section || s === check.id);
}

/** Throws for a selector that names neither a section nor a check. */
export function validateSelectorsAgainst(
  selectors: readonly string[],
  sections: readonly string[],
  checks: readonly RunnableCheck<never>[],
): void {
  for (const s of selectors) {
    if (!sections.includes(s) && !checks.some((c) => c.id === s)) {
      throw new Error(`unknown section or check ${JSON.stringify(s)}; sections: ${sections.join(", ")}`);
    }
  }
}

/** The checks `only` and `skip` select, in suite order. */
export function selectChecks<C extends RunnableCheck<never>>(
  all: readonly C[],
  sections: readonly string[],
  only: readonly string[] = [],
  skip: readonly string[] = [],
): C[] {
  validateSelectorsAgainst([...only, ...skip], sections, all);
  return all.filter((c) => (only.length === 0 || matches(c, only)) && !matches(c, skip));
}

async function runOne<Ctx>(check: RunnableCheck<Ctx>, options: PoolOptions<Ctx>): Promise<CheckResult> {
  const base = { id: check.id, section: check.section, ref: check.ref, expectation: check.expectation };
  const skip = options.skipReason?.(check);
  if (skip !== undefined) return { ...base, status: "skipped", saw: skip, durationMs: 0 };
  const { ctx, dispose } = options.context();
  const started = Date.now();
  const limit = options.checkTimeoutMs;
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
    await dispose();
  }
}

/** Runs `checks` at most `concurrency` at a time; results land in `into`. */
export async function runPool<Ctx>(
  checks: readonly RunnableCheck<Ctx>[],
  options: PoolOptions<Ctx>,
  into: Map<RunnableCheck<Ctx>, CheckResult>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < checks.length) {
      const check = checks[next++]!;
      const result = await runOne(check, options);
      into.set(check, result);
      options.onResult?.(result);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(options.concurrency, checks.length)) }, worker));
}

/** Counts of a run's results, in the order the checks were selected. */
export function summarize<Ctx>(
  selected: readonly RunnableCheck<Ctx>[],
  results: ReadonlyMap<RunnableCheck<Ctx>, CheckResult>,
  started: number,
): Pick<BaseReport, "results" | "passed" | "failed" | "skipped" | "durationMs"> {
  const ordered = selected.map((c) => results.get(c)!);
  return {
    results: ordered,
    passed: ordered.filter((r) => r.status === "passed").length,
    failed: ordered.filter((r) => r.status === "failed").length,
    skipped: ordered.filter((r) => r.status === "skipped").length,
    durationMs: Date.now() - started,
  };
}

/** Runs server checks against a server and collects one result per check. */
import { SECTIONS, type Check, type ServerSetting } from "./check.js";
import { SuiteContext, type SuiteOptions } from "./context.js";
import {
  runPool,
  selectChecks,
  summarize,
  validateSelectorsAgainst,
  type BaseReport,
  type CheckResult,
  type RunnableCheck,
} from "./run-checks.js";
import { serverChecks } from "./suite.js";

export type { Status, CheckResult, BaseReport } from "./run-checks.js";

export interface SuiteReport extends BaseReport {
  readonly suite: "server";
  readonly url: string;
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

/** The command-line flag that gives each server setting (for the reason a check is skipped). */
export const SETTING_FLAGS: Readonly<Record<ServerSetting, string>> = {
  firstMessageTimeoutMs: "--first-message-timeout",
  pingIntervalMs: "--ping-interval",
  maxConnectionsPerPrincipal: "--max-connections-per-principal",
  maxRunningSessionsPerPrincipal: "--max-sessions-per-principal",
};

/** Why `check` cannot run with `options`, if it cannot. */
function skipReason(check: Check, options: RunOptions): string | undefined {
  if (check.section === "restart" && options.restartCmd === undefined) return "no --restart-cmd given";
  if (check.durable === true && options.durableRestart !== true)
    return "no --durable-restart given: only a server that continues what a restart interrupted keeps a journal to follow";
  if (check.otherPrincipal === true && options.otherPrincipalToken === undefined)
    return "no --other-principal-token given: the check needs the token of a second principal the server accepts";
  if (check.needs !== undefined && options[check.needs] === undefined)
    return `the server's ${check.needs} was not given (${SETTING_FLAGS[check.needs]}): a server may set it otherwise, or not enforce it`;
  return undefined;
}

/** Throws for a selector that names neither a section nor a check. */
export function validateSelectors(selectors: readonly string[], checks: readonly Check[]): void {
  validateSelectorsAgainst(selectors, SECTIONS, checks as readonly RunnableCheck<never>[]);
}

/** Runs the selected checks and returns their results in suite order. */
export async function runServerSuite(options: RunOptions): Promise<SuiteReport> {
  const selected = selectChecks(options.checks ?? serverChecks(), SECTIONS, options.only, options.skip);
  const started = Date.now();
  const results = new Map<RunnableCheck<SuiteContext>, CheckResult>();
  const pool = (concurrency: number) => ({
    concurrency,
    checkTimeoutMs: options.checkTimeoutMs ?? 60_000,
    onResult: options.onResult,
    context: () => {
      const ctx = new SuiteContext(options);
      return { ctx, dispose: () => ctx.cleanup() };
    },
    skipReason: (check: RunnableCheck<SuiteContext>) => skipReason(check as Check, options),
  });
  await runPool(
    selected.filter((c) => c.section !== "restart"),
    pool(options.concurrency ?? 4),
    results,
  );
  await runPool(
    selected.filter((c) => c.section === "restart"),
    pool(1),
    results,
  );
  return { suite: "server", target: options.url, url: options.url, ...summarize(selected, results, started) };
}

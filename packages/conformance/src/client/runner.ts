/** Runs client scenarios against an adapter and collects one result per scenario. */
import { runPool, selectChecks, summarize, type BaseReport, type CheckResult, type RunnableCheck } from "../run-checks.js";
import { ClientContext, type ClientSuiteOptions } from "./context.js";
import { CLIENT_SECTIONS, type Scenario } from "./scenario.js";
import { clientScenarios } from "./suite.js";

export interface ClientSuiteReport extends BaseReport {
  readonly suite: "client";
  /** The adapter command. */
  readonly target: string;
}

export interface ClientRunOptions extends ClientSuiteOptions {
  /** Sections or scenario ids to run (default: all). */
  readonly only?: readonly string[];
  /** Sections or scenario ids to leave out. */
  readonly skip?: readonly string[];
  /** Scenarios run at once, each with its own server and adapter process (default 2). */
  readonly concurrency?: number;
  /** Hard deadline of one scenario, in ms (default 60 000). */
  readonly checkTimeoutMs?: number;
  readonly onResult?: (result: CheckResult) => void;
  /** The scenarios to choose from (default: the whole client suite). */
  readonly scenarios?: readonly Scenario[];
}

export async function runClientSuite(options: ClientRunOptions): Promise<ClientSuiteReport> {
  const selected = selectChecks(options.scenarios ?? clientScenarios(), CLIENT_SECTIONS, options.only, options.skip);
  const started = Date.now();
  const results = new Map<RunnableCheck<ClientContext>, CheckResult>();
  await runPool(
    selected,
    {
      concurrency: options.concurrency ?? 2,
      checkTimeoutMs: options.checkTimeoutMs ?? 60_000,
      onResult: options.onResult,
      context: () => {
        const ctx = new ClientContext(options);
        return { ctx, dispose: () => ctx.dispose() };
      },
    },
    results,
  );
  return { suite: "client", target: options.adapter, ...summarize(selected, results, started) };
}

/**
 * Re-runs after owner loss (docs/durable-execution.md): an invocation found
 * running that no process runs any more (this process restarted, or this
 * node claimed it from a node whose lease lapsed) runs again from the start
 * when its method is replayable, or fails. A re-run continues work its
 * principal already had admitted, so it holds one of the principal's running
 * slots (`limits.maxRunningSessionsPerPrincipal`) like the original run, and
 * is never refused for it (docs/protocol/server.md, "Per-principal bounds").
 */
import type { ConfigEntry, JsonValue, SchemaGraphJson, SchemaValueJson } from "@golem-stream/wire";
import { durabilityOf, type MethodDescriptor } from "../agent-host.js";
import { catalogueGraph, decodeValue } from "../values.js";
import type { LiveSession } from "../invocation/live-session.js";
import type { SessionDeps } from "../invocation/session-deps.js";
import type { Principal } from "../options.js";
import { identityOf } from "../observability/server-observer.js";
import { sessionFields } from "../observability/log-observer.js";
import type { InvocationRuns, RunningSlot } from "./invocation-runs.js";
import type { RecordedRun } from "../store/session-store.js";

/** The principals' running slots, as a re-run takes one (`PrincipalSlots`, admission/principal-slots.ts, implements it). */
export interface RerunSlots {
  /** A slot for `caller` even past the bound: a re-run continues work already admitted. */
  hold(caller: Principal): RunningSlot;
}

export class Reruns {
  readonly #deps: SessionDeps;
  readonly #runs: InvocationRuns;
  readonly #runningPerPrincipal: RerunSlots;

  constructor(deps: SessionDeps, runs: InvocationRuns, runningPerPrincipal: RerunSlots) {
    this.#deps = deps;
    this.#runs = runs;
    this.#runningPerPrincipal = runningPerPrincipal;
  }

  /**
   * An interrupted invocation runs again when it can, and fails otherwise (its open streams
   * terminated, `invocation-failed`), saying why in the log: the client is told only that it failed.
   */
  async rerunOrFail(live: LiveSession): Promise<void> {
    const notRerun = await this.#rerun(live);
    if (notRerun === undefined) return;
    this.#deps.logger.warn("an interrupted invocation fails: it is not run again here", {
      event: "invocation.interrupted",
      ...sessionFields(identityOf(live.record)),
      reason: notRerun,
    });
    await live.failInterrupted();
  }

  /**
   * Why `live`'s invocation could not be run again from the start if it were interrupted now
   * (its method gone or not replayable, a store without journals, parameters its method no
   * longer takes), or undefined when it could: a drain leaves such an invocation to the next
   * owner instead of failing it. Whether it has re-runs left is the store's to say, at the re-run.
   */
  whyNotRerunnable(live: LiveSession): string | undefined {
    if (this.#deps.limits.maxReplays === 0) return "limits.maxReplays is 0: nothing is run again";
    const method = this.#rerunnableMethod(live);
    return typeof method === "string" ? method : undefined;
  }

  /** The method a re-run of `live` would run, or why there is none. */
  #rerunnableMethod(live: LiveSession): MethodDescriptor | string {
    const record = live.record;
    const store = this.#deps.store;
    const type = this.#deps.host.agentTypes(record.application, record.environment)?.find((t) => t.name === record.agentType);
    const method = type?.methods.find((m) => m.name === record.method);
    if (type === undefined || method === undefined) return "the catalogue no longer has its method";
    if (durabilityOf(type, method) !== "replay") return 'its method is not replayable (durability: "replay" would run it again)';
    if (store.recordRun === undefined || store.readJournal === undefined || store.appendJournal === undefined)
      return "the store keeps no journal, which a re-run needs";
    return staleParameters(record.parameters, method.parameters) ?? method;
  }

  /**
   * Runs an interrupted invocation again from the start (docs/durable-execution.md) when its
   * method is replayable here, the store keeps journals and it has re-runs left
   * (`limits.maxReplays`); resolves to whether it does. The method is the catalogue's of this
   * name; the parameters, constructor and configuration are the session's own. Resolves to
   * undefined when it runs again, otherwise to why it does not.
   */
  async #rerun(live: LiveSession): Promise<string | undefined> {
    const record = live.record;
    const store = this.#deps.store;
    const method = this.#rerunnableMethod(live);
    if (typeof method === "string") return method;
    if (store.recordRun === undefined || store.readJournal === undefined) return "the store keeps no journal, which a re-run needs";
    // Counted before it runs: a method that crashes its server every time still reaches the bound.
    // What counts is the re-runs in a row that found nothing new since the one before: a
    // method that crashes at the same place every time, not one that is moved on by node losses
    // while it works (a rolling restart, a node lost now and then under a long invocation).
    let run: RecordedRun;
    let journal: Awaited<ReturnType<typeof store.readJournal>>;
    try {
      journal = await store.readJournal(record.sessionId);
      run = recordedRun(await store.recordRun(record.sessionId, live.ownerEpoch, progressOf(live, journal.length)));
    } catch (error) {
      // Finished meanwhile (another node), or a store that fails now: not re-run; failing it records what can be.
      this.#deps.logger.warn("could not start re-running an interrupted invocation", {
        event: "invocation.replay-failed",
        session: record.sessionId,
        error: String(error),
      });
      return "its re-run could not be started (invocation.replay-failed)";
    }
    const maxReplays = this.#deps.limits.maxReplays;
    if (maxReplays === 0 || run.withoutProgress > maxReplays) {
      this.#deps.logger.warn("an interrupted replayable invocation has no re-runs left: it fails", {
        event: "invocation.replays-exhausted",
        session: record.sessionId,
        maxReplays,
      });
      return `it has no re-runs left (limits.maxReplays ${maxReplays}${maxReplays === 0 ? "" : ", re-runs in a row that found no progress"})`;
    }
    const attempt = run.run;
    const selector = JSON.parse(record.selector) as { constructorParameters: SchemaValueJson };
    const input = {
      constructorParameters: selector.constructorParameters,
      parameters: JSON.parse(record.parameters) as SchemaValueJson,
      config: JSON.parse(record.config) as ConfigEntry[],
    };
    this.#deps.observer.replayStarted(identityOf(record), attempt);
    // Held past the bound if need be: refusing it would fail work the principal was already admitted for.
    const slot = this.#runningPerPrincipal.hold({ account: record.account, principal: record.principal });
    this.#runs.launch(live, () => live.run(method, input, { journaled: true, rerun: { attempt, journal } }), slot);
    return undefined;
  }
}

/**
 * How far the invocation's runs have got, as a re-run finds it: the output items and stream ends
 * its runs committed, the input its clients sent, and its journal's entries. It only grows while
 * the invocation runs (a re-run commits nothing before it passes what is stored), so a re-run that
 * finds it larger than the one before did found work done in between.
 */
function progressOf(live: LiveSession, journalEntries: number): bigint {
  let progress = BigInt(journalEntries);
  for (const stream of live.streams()) {
    if (stream.direction === "output") progress += stream.count + (stream.outputTerminal ? 1n : 0n);
    // Input counts too: an upload moved on by node losses commits more between them (finite, and
    // a method that crashes at the same item stops taking input once its queue and permits fill).
    else progress += stream.count + (stream.inputTerminal === undefined ? 0n : 1n);
  }
  return progress;
}

/** A store's answer to `recordRun`: a number from a store that does not count progress is the runs so far, each re-run one without progress. */
function recordedRun(answer: RecordedRun | number): RecordedRun {
  return typeof answer === "number" ? { run: answer, withoutProgress: answer - 1 } : answer;
}

/**
 * Why the parameters the invocation started with no longer fit the method of its name, if they do
 * not: the catalogue changed since (a module edited and served again). A re-run would fail on them
 * at once, or, for a method that does not check, run on values its code no longer means.
 */
function staleParameters(stored: string, graph: SchemaGraphJson): string | undefined {
  try {
    decodeValue(JSON.parse(stored) as JsonValue, catalogueGraph(graph), "stable", "methodParameters");
    return undefined;
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return `its parameters do not fit the method's schema any more (the catalogue changed since it started; a changed method needs a new name): ${why}`;
  }
}

/**
 * The node's side of the sessions: what it holds in memory (`SessionCache`),
 * what it runs (`InvocationRuns`), and the steps of its life that act on all
 * of them at once: recovery at start (`recoverInterrupted`), claims of
 * sessions whose owner's lease lapsed (`claimOrphans`), the drain
 * (`finishOwned`) and the hard stop (`shutdown`). The first-message rules
 * (admission/session-runtime.ts) reach sessions through it.
 */
import type { SessionDeps } from "../invocation/session-deps.js";
import { InvocationRuns } from "./invocation-runs.js";
import { Reruns, type RerunSlots } from "./reruns.js";
import { SessionCache } from "./session-cache.js";
import type { TimerHandle } from "../timers.js";
import type { DrainOutcome } from "../server-options.js";
import type { LiveSession } from "../invocation/live-session.js";
import { identityOf } from "../observability/server-observer.js";
import { sessionFields } from "../observability/log-observer.js";

/** After a store failure while recovering at start: the first wait before trying again, doubling up to the last. */
const RECOVERY_RETRY_MS = 1_000;
const MAX_RECOVERY_RETRY_MS = 30_000;
/** How long a drain waits for the store to record a hand-over (`#recordHandOver`). */
const HAND_OVER_MARK_MS = 2_000;

export class NodeLifecycle {
  readonly cache: SessionCache;
  readonly runs: InvocationRuns;
  readonly #deps: SessionDeps;
  readonly #reruns: Reruns;
  /** Sessions this node claimed whose re-run or failure could not be started then (a store failure). */
  readonly #unhandledClaims = new Set<string>();
  /** The next attempt at recovering what a store failure left unrecovered at start. */
  #recoveryRetry: TimerHandle | undefined;
  /** Shut down: no more recovery attempts. */
  #stopped = false;

  /** `runningPerPrincipal` counts new invocations and re-runs alike (`limits.maxRunningSessionsPerPrincipal`). */
  constructor(deps: SessionDeps, runningPerPrincipal: RerunSlots) {
    this.#deps = deps;
    this.runs = new InvocationRuns(deps.observer, (live) => this.cache.evictIfIdle(live));
    this.#reruns = new Reruns(deps, this.runs, runningPerPrincipal);
    this.cache = new SessionCache(deps, (live) => this.#reruns.rerunOrFail(live));
  }

  /**
   * Finishes every session a previous process left running (see docs/protocol/server.md); resolves
   * to how many. Each is taken on its own: one the store fails on is logged and tried again later
   * (a store that fails to list them: all of them), with the others recovered meanwhile and the
   * node started. Stopped there, the node left them running for good, unrun, its lease live.
   */
  recoverInterrupted(): Promise<number> {
    return this.#recover(1);
  }

  async #recover(attempt: number): Promise<number> {
    let failed: unknown;
    let recovered = 0;
    try {
      for (const record of await this.#deps.store.listRunningSessions()) {
        if (this.#stopped) break;
        try {
          if (await this.cache.exclusive(record.sessionId, () => this.#recoverOne(record.sessionId))) recovered++;
        } catch (error) {
          failed = error;
          this.#deps.logger.error("could not recover an interrupted session: tried again later", {
            event: "session.recovery-failed",
            session: record.sessionId,
            error: String(error),
          });
        }
      }
    } catch (error) {
      failed = error;
      this.#deps.logger.error("could not list the interrupted sessions: tried again later", {
        event: "recovery.failed",
        error: String(error),
      });
    }
    if (failed !== undefined && !this.#stopped) {
      const retryInMs = Math.min(RECOVERY_RETRY_MS * 2 ** (attempt - 1), MAX_RECOVERY_RETRY_MS);
      this.#recoveryRetry = this.#deps.timers.setTimeout(() => {
        this.#recoveryRetry = undefined;
        void this.#recover(attempt + 1).then((count) => {
          if (count > 0)
            this.#deps.logger.warn("recovered sessions a restart interrupted: re-run, or failed (invocation.interrupted says why)", {
              event: "recovery.interrupted",
              count,
            });
        });
      }, retryInMs);
    }
    return recovered;
  }

  /** Recovers one interrupted session unless it is in memory or (cluster) another node's; resolves to whether it did. */
  async #recoverOne(sessionId: string): Promise<boolean> {
    if (this.cache.get(sessionId) !== undefined) return false;
    const cluster = this.#deps.cluster;
    // In a cluster, other nodes' sessions are theirs (or, once their lease lapses, an orphan
    // claim's). This node's own are taken at their next epoch: a former process of this node id
    // may still be alive (frozen past the restart, or started twice), and at the epoch it holds
    // its writes would go through beside this process's.
    if (cluster !== undefined && (await cluster.reclaim(sessionId)) === undefined) return false;
    const live = await this.cache.load(sessionId);
    if (live !== undefined) this.cache.evictIfIdle(live);
    return true;
  }

  /**
   * Cluster mode: claims the running sessions whose owner's lease lapsed
   * (docs/cluster.md) and treats them as a restart does: a replayable one
   * runs again here (docs/durable-execution.md), any other is finished, its
   * open streams terminated, `invocation-failed`. Clients attached at any
   * node follow through the change feed. Returns how many were claimed.
   */
  async claimOrphans(): Promise<number> {
    const cluster = this.#deps.cluster;
    if (cluster === undefined) return 0;
    const claimed = await cluster.claimOrphans();
    for (const sessionId of claimed) await this.#handleClaimed(sessionId, true);
    // Claimed earlier and not handled then: they are this node's, so no claim returns them again.
    for (const sessionId of [...this.#unhandledClaims]) if (!claimed.includes(sessionId)) await this.#handleClaimed(sessionId, false);
    return claimed.length;
  }

  /**
   * Takes one claimed session on its own: a store failure while it is re-run or failed must not
   * leave the others claimed by this node and never run, as a later claim skips what this node
   * owns. One that fails is tried again at the next claim; `log` says the failure (not on a retry).
   */
  async #handleClaimed(sessionId: string, log: boolean): Promise<void> {
    try {
      await this.cache.exclusive(sessionId, () => this.#takeClaimed(sessionId));
      // Handled now (perhaps claimed again since an earlier failure): never taken again, which
      // would supersede the run just started.
      this.#unhandledClaims.delete(sessionId);
    } catch (error) {
      this.#unhandledClaims.add(sessionId);
      if (!log) return;
      this.#deps.logger.error("could not re-run or fail a claimed session: tried again at the next claim", {
        event: "session.claim-failed",
        session: sessionId,
        error: String(error),
      });
    }
  }

  /** Runs again, or fails, a session this node has just claimed. */
  async #takeClaimed(sessionId: string): Promise<void> {
    const cluster = this.#deps.cluster;
    if (cluster === undefined) return;
    let live = this.cache.get(sessionId);
    if (live?.running === true) {
      const current = await cluster.ownership(sessionId);
      // It already runs here at this claim's epoch (an earlier handling of it, or recovery): handled.
      if (current?.nodeId === cluster.nodeId && current.epoch <= live.ownerEpoch) return;
      // An earlier run of it, at an older epoch, still goes on here: it stops, and the session is loaded afresh.
      live.supersede();
      this.cache.forget(live);
      live = undefined;
    }
    if (live === undefined) {
      const loaded = await this.cache.load(sessionId);
      if (loaded !== undefined) this.cache.evictIfIdle(loaded);
      return;
    }
    // The epoch of this claim (or of a later one by this node); claimed from this node since: that node's to finish.
    const ownership = await cluster.ownership(sessionId);
    if (ownership?.nodeId !== cluster.nodeId) return;
    // Nothing runs it here: first brought to what the store holds as a mirror is (a mirror takes the
    // outputs' counts and ends, the result and the finish from the store, an owner only input).
    // Switched first, the re-run would start from the counts this copy last heard of, and the store
    // would refuse its output after them. The refresh waits for any refresh in flight.
    live.role = "mirror";
    await live.syncFromStore();
    live.ownerEpoch = ownership.epoch;
    live.role = "owner";
    // What was committed since (another node's attachment's input), taken as the owner takes it.
    await live.syncFromStore();
    if (!live.finished) await this.#reruns.rerunOrFail(live);
    this.cache.evictIfIdle(live);
  }

  /**
   * Waits until every invocation this process runs has finished, or until `deadline` (ms since
   * the epoch, by `deps.now`). Then those still running whose method a re-run could run again
   * (replayable, on a store with journals) are stopped without recording anything: left running
   * in the store, the next owner runs them again (another node once this one has left the
   * cluster; this one when it starts again), as after a crash, with no work lost. The rest are
   * failed, as a restart would fail them.
   */
  async finishOwned(deadlineMs: number): Promise<DrainOutcome> {
    const remaining = Math.max(0, deadlineMs - this.#deps.now());
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, remaining)));
    // Starts in flight first: a session committed here just before the drain would otherwise be
    // neither run to its end nor failed by this node (another node would claim it later).
    await this.runs.startsDecided();
    await Promise.race([this.runs.ended(), deadline]);
    clearTimeout(timer);
    const running = [...this.cache.values()].filter((live) => live.role === "owner" && !live.finished);
    const toFail: LiveSession[] = [];
    const toHandOver: LiveSession[] = [];
    for (const live of running) {
      // One whose outcome is on its way ends here: a success being committed stays a success.
      if (!live.running || live.ending || this.#reruns.whyNotRerunnable(live) !== undefined) toFail.push(live);
      else toHandOver.push(live);
    }
    for (const live of toHandOver) {
      live.abortForShutdown();
      this.#deps.logger.info("an invocation still running at the drain's deadline is left to its next owner, who runs it again", {
        event: "invocation.handed-over",
        ...sessionFields(identityOf(live.record)),
      });
    }
    // All at once: one after another, N invocations would keep the node N commits past its deadline.
    const [outcomes] = await Promise.all([
      Promise.all(
        toFail.map(async (live) => {
          await live.failNow();
          // A success whose finish was being committed at the deadline stays a success.
          return live.record.outcome !== undefined && (JSON.parse(live.record.outcome) as { kind: string }).kind === "failure";
        }),
      ),
      Promise.all(toHandOver.map((live) => this.#recordHandOver(live))),
    ]);
    return { failed: outcomes.filter(Boolean).length, handedOver: toHandOver.length };
  }

  /**
   * Tells the store that `live` was handed over, before the node leaves (its next owner may be
   * this node started again): its next re-run is not counted against `limits.maxReplays`. Not
   * recorded (a store without it, failing now, or not answering within `HAND_OVER_MARK_MS`: the
   * drain's deadline has passed, and a store in an outage would hold the node past its grace
   * period), the re-run counts as after any loss.
   */
  async #recordHandOver(live: LiveSession): Promise<void> {
    const store = this.#deps.store;
    if (store.recordHandOver === undefined) return;
    const timers = this.#deps.timers;
    let timer: TimerHandle | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = timers.setTimeout(() => reject(new Error(`the store did not answer within ${HAND_OVER_MARK_MS} ms`)), HAND_OVER_MARK_MS);
    });
    try {
      await Promise.race([store.recordHandOver(live.record.sessionId, live.ownerEpoch), late]);
    } catch (error) {
      this.#deps.logger.warn("could not record a drain's hand-over: the next re-run counts as after a loss", {
        event: "invocation.hand-over-unrecorded",
        ...sessionFields(identityOf(live.record)),
        error: String(error),
      });
    } finally {
      if (timer !== undefined) timers.clearTimeout(timer);
    }
  }

  /** Stops every invocation without recording anything; the store stays consistent. */
  shutdown(): void {
    this.#stopped = true;
    if (this.#recoveryRetry !== undefined) this.#deps.timers.clearTimeout(this.#recoveryRetry);
    this.cache.abortAll();
  }
}

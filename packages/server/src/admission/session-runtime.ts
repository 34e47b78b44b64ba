/**
 * `SessionRuntime`, the runtime's entry for every first message (sections
 * 5.1, 5.2, 9, 10): `start` (start-admission.ts), `resume` and `takeover`
 * (resume-admission.ts), each ending in an exact-attempt replay when its
 * attempt was decided before (exact-replay.ts). It applies what admission/
 * decides (tokens, per-principal bounds) and hands each accepted transport
 * an `Attachment`. The sessions in memory and the node's recovery, claims
 * and drain are `node` (sessions/node-lifecycle.ts). Nothing here touches a
 * socket.
 */
import type { InvocationStart, ResumeAttach } from "@golem-stream/wire";
import type { Attachment } from "../attachment/attachment.js";
import type { RuntimeDeps } from "./runtime-deps.js";
import type { Authorizer, Principal } from "../options.js";
import type { SessionTransport } from "../transport/transport.js";
import { NodeLifecycle } from "../sessions/node-lifecycle.js";
import { ExactReplay } from "./exact-replay.js";
import { PrincipalSlots } from "./principal-slots.js";
import { ResumeAdmission } from "./resume-admission.js";
import { StartAdmission } from "./start-admission.js";

export class SessionRuntime {
  readonly deps: RuntimeDeps;
  /** The sessions in memory and the node's recovery, orphan claims, drain and stop. */
  readonly node: NodeLifecycle;
  readonly #starts: StartAdmission;
  readonly #resumes: ResumeAdmission;

  constructor(deps: RuntimeDeps, authorizer: Authorizer) {
    this.deps = deps;
    const runningPerPrincipal = new PrincipalSlots(deps.limits.maxRunningSessionsPerPrincipal, "sessions", (limit) =>
      deps.observer.principalLimitReached(limit),
    );
    this.node = new NodeLifecycle(deps, runningPerPrincipal);
    const replay = new ExactReplay(deps, this.node.cache, authorizer);
    this.#starts = new StartAdmission(deps, this.node, replay, authorizer, runningPerPrincipal);
    this.#resumes = new ResumeAdmission(deps, this.node.cache, replay, authorizer);
  }

  /** Sessions held in memory now. */
  get liveSessions(): number {
    return this.node.cache.size;
  }

  start(message: InvocationStart, caller: Principal, transport: SessionTransport): Promise<Attachment> {
    return this.#starts.start(message, caller, transport);
  }

  resume(message: ResumeAttach, caller: Principal, transport: SessionTransport): Promise<Attachment> {
    return this.#resumes.resume(message, caller, transport);
  }

  /** Finishes every session a previous process left running (`NodeLifecycle.recoverInterrupted`). */
  recoverInterrupted(): Promise<number> {
    return this.node.recoverInterrupted();
  }

  /** Stops every invocation without recording anything (`NodeLifecycle.shutdown`). */
  shutdown(): void {
    this.node.shutdown();
  }
}

/**
 * What a live session needs of the server that loads it: the store, the
 * agent host, the limits, the clocks and the observers, and the shared
 * tables of the node (its byte budget, the token service, the per-principal
 * bound on stored bytes). Declared here, beside the sessions that use it, so
 * the invocation's files (live-session.ts and the parts it is made of)
 * share one description without importing each other for it.
 */
import type { AgentHost } from "../agent-host.js";
import type { Logger, ServerLimits } from "../options.js";
import type { SessionStore } from "../store/session-store.js";
import type { ClusterSessionStore } from "../store/cluster-store.js";
import type { ServerObserver } from "../observability/server-observer.js";
import type { Timers } from "../timers.js";
import type { NodeBudget } from "./node-budget.js";
import type { TokenService } from "../admission/token-service.js";
import type { StoredBytesTable } from "../admission/stored-bytes.js";

export interface RuntimeDeps {
  readonly store: SessionStore;
  /** Set when the store is shared by a cluster of nodes (the same object as `store`). */
  readonly cluster: ClusterSessionStore | undefined;
  readonly host: AgentHost;
  readonly tokens: TokenService;
  readonly limits: ServerLimits;
  readonly logger: Logger;
  /** Metrics, log events and spans (observability/); `NOOP_OBSERVER` when none is configured. */
  readonly observer: ServerObserver;
  readonly now: () => number;
  /** The timers of time-dependent behaviour (the detached timeout); `ManualTimers` in tests. */
  readonly timers: Timers;
  /** Bytes held in memory by all sessions and connections of this server (`limits.maxQueuedBytesPerNode`). */
  readonly nodeBudget: NodeBudget;
  /** Payload bytes each principal keeps in the store (`limits.maxStoredBytesPerPrincipal`). */
  readonly storedBytes: StoredBytesTable;
}


/**
 * What a live session needs of the server that loads it: the store, the
 * agent host, the limits, the clocks and the observers, and the shared
 * tables of the node (its byte budget, its stream tokens, the per-principal
 * bound on stored bytes). Declared here, beside the sessions that use it, so
 * the invocation's files (live-session.ts and the parts it is made of)
 * share one description without importing each other for it.
 *
 * The token service and the stored-bytes table belong to the admission,
 * above the invocation in the runtime's order (docs/architecture.md): the
 * session sees them through the two ports below, which they implement, and
 * the server's full set of dependencies (`RuntimeDeps`,
 * admission/runtime-deps.ts) adds what only the admission uses of them.
 */
import type { AgentHost } from "../agent-host.js";
import type { Logger, ServerLimits } from "../options.js";
import type { SessionStore } from "../store/session-store.js";
import type { ClusterSessionStore } from "../store/cluster-store.js";
import type { ServerObserver } from "../observability/server-observer.js";
import type { Timers } from "../timers.js";
import type { NodeBudget } from "./node-budget.js";
import type { CursorEvent } from "@golem-stream/tokens";
import type { StreamDirection } from "@golem-stream/wire";
import type { Principal } from "../options.js";
import type { StoredBytesExceeded } from "../stored-bytes-exceeded.js";

/** The tokens of a session's streams (`TokenService`, admission/token-service.ts, implements them). */
export interface StreamTokens {
  /** Mints the token of a new stream; throws `TokenTooLongError` (`limit-exceeded`) when it would be too long. */
  mintStream(
    caller: Principal,
    sessionId: string,
    streamKeyId: string,
    stream: { streamId: string; direction: StreamDirection; elementSchemaDigest: string; coordinate: string },
  ): string;
  /** The cursors of one output stream, minted as its attachment sends it (attachment/output-pumps.ts). */
  cursorsOf(caller: Principal, sessionId: string, streamId: string): (position: bigint, event: CursorEvent) => string;
}

/** The per-principal bound on stored payload bytes (`StoredBytesTable`, admission/stored-bytes.ts, implements it). */
export interface StoredBytesCharge {
  /** Counts `bytes` more for `owner` and returns undefined, or counts nothing and returns the refusal. */
  charge(owner: Principal, bytes: number): StoredBytesExceeded | undefined;
}

export interface SessionDeps {
  readonly store: SessionStore;
  /** Set when the store is shared by a cluster of nodes (the same object as `store`). */
  readonly cluster: ClusterSessionStore | undefined;
  readonly host: AgentHost;
  readonly tokens: StreamTokens;
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
  readonly storedBytes: StoredBytesCharge;
}

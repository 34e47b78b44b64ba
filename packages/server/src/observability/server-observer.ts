/**
 * The observability folder owns what operators see: the observer interface
 * the runtime calls (this file), its Prometheus, log and OpenTelemetry
 * implementations, the pino adapter, and the `/metrics`, `/healthz` and
 * `/readyz` endpoints. It sees facts and reaches into no other role.
 *
 * What the runtime tells operators about, as method calls on one small
 * interface: metrics (prometheus-metrics.ts), log lines (log-observer.ts)
 * and trace spans (tracing-observer.ts) each implement it, and the runtime
 * calls whichever were configured through `composeObservers`. Nothing in the
 * runtime imports prom-client, a logger or OpenTelemetry on its hot paths:
 * by default every call lands on `NOOP_OBSERVER`.
 *
 * Arguments carry only public, bounded facts: the store's session id (a
 * random UUID, never a token), the session's selector names, public error
 * codes, close statuses, element kinds. No token, attempt id, idempotency
 * key or value ever reaches an observer.
 */
import type { ErrorCode } from "@golem-stream/wire";
import type { ElementKind } from "../store/session-store.js";
import type { StoreOutageEvent } from "../store/outage-grace.js";

/** How an attachment came to own (or replay) a session. */
export type AttachOperation = "start" | "replay" | "resume" | "takeover";

/**
 * The first message an attach rejection answered; `upgrade` before any message (HTTP), `unknown`
 * when it could not be decoded; `discover` a refused catalogue request (`GET /v1/agents/types`),
 * which authenticates like an upgrade and is where a wrong token shows first; `connection` a
 * connection to the server's own listener refused before any request (`limits.maxHttpConnections`).
 */
export type RejectedOperation = "start" | "resume" | "takeover" | "upgrade" | "unknown" | "discover" | "connection";

/** Why the server paused taking more from a client or a producer (protocol section 12). */
export type BackpressureReason =
  /** The connection's inbound queue is full: the socket stops being read. */
  | "inbound-queue"
  /** The session's byte permits are spent: the next message waits before it is decoded. */
  | "session-budget"
  /** The node's byte budget is spent: every connection stops reading its socket until it is not. */
  | "node-budget"
  /** The socket's send buffer is above its high-water mark: the sender waits for it to drain. */
  | "socket-buffer"
  /** An input stream's queue holds its 256 entries the agent has not taken: the next item waits for room. */
  | "input-queue"
  /** An output producer is a window (256 events or the session's byte budget) ahead of the client: it waits for the client to catch up. */
  | "output-window";

/** Why a connection was dropped for silence: no first message in time, or two pings unanswered. */
export type SilenceReason = "first-message" | "ping";

/** Which per-principal bound refused a caller: its open connections, its running sessions, or the bytes it keeps in the store. */
export type PrincipalLimit = "connections" | "sessions" | "stored-bytes";

/** A session's public identifiers. */
export interface SessionIdentity {
  /** The store's id of the session (a random UUID, not a token). */
  readonly sessionId: string;
  readonly application: string;
  readonly environment: string;
  readonly agentType: string;
  readonly method: string;
}

export interface AttachEvent {
  readonly operation: AttachOperation;
  readonly session: SessionIdentity;
  readonly generation: bigint;
}

/** Why an attachment ended. */
export type AttachmentEnd = "finished" | "revoked" | "closed" | "violation" | "fault";

/** One attachment's observations, from its acceptance to its end. */
export interface AttachmentObserver {
  /** Another attachment took the session over (or an exact replay found it superseded). */
  revoked(): void;
  /** The client broke the protocol after acceptance; the socket closes with `closeStatus`. */
  violation(code: ErrorCode, closeStatus: number): void;
  /** Called once, last. */
  ended(reason: AttachmentEnd): void;
}

export interface ServerObserver {
  /** A new session was created (its start committed). */
  sessionStarted(session: SessionIdentity): void;
  /** A session's finish was committed by this process; `outcome` is `success` or the failure's public code. */
  sessionFinished(session: SessionIdentity, outcome: "success" | ErrorCode, durationMs: number): void;
  /** An invocation began (+1) or stopped (-1) running in this process. */
  invocationsRunning(delta: 1 | -1): void;
  /** An attachment was decided; the returned observer follows it. */
  attached(event: AttachEvent): AttachmentObserver;
  /** An attach (or the upgrade before it) was refused with a public code. */
  attachRejected(code: ErrorCode, operation: RejectedOperation): void;
  /** A connection broke the protocol with no attachment to report it against. */
  violation(code: ErrorCode, closeStatus: number): void;
  /** Input accepted from a client (counted when handed to the store). */
  inputAccepted(kind: ElementKind, items: number, bytes: number): void;
  /** Output recorded by a producer. */
  outputRecorded(kind: ElementKind, items: number, bytes: number): void;
  /** Output handed to a client's connection (an event sent again after a resume counts again). */
  outputSent(kind: ElementKind, items: number, bytes: number): void;
  /** The store committed a group of `writes` writes in one transaction, taking `seconds`. */
  storeCommitted(seconds: number, writes: number): void;
  /** The store found its database unavailable, retried, answered again, or failed writes past its outage grace. */
  storeOutage(event: StoreOutageEvent): void;
  backpressure(reason: BackpressureReason): void;
  connectionOpened(): void;
  connectionClosed(): void;
  /** A session socket said nothing for too long (no first message, or two pings unanswered) and was closed. */
  connectionSilent(reason: SilenceReason): void;
  /**
   * A caller was refused for holding as many connections or running invocations as one principal may
   * (`overloaded`), or for keeping as many bytes in the store (`limit-exceeded`: a start refused, or an
   * item never stored and its invocation failed).
   */
  principalLimitReached(limit: PrincipalLimit): void;
  /** Cluster mode: a lease heartbeat succeeded or failed. */
  leaseHeartbeat(ok: boolean): void;
  /**
   * Cluster mode, at each heartbeat after the first that succeeds: whether another process renewed
   * this node id's lease since this one's last heartbeat (two processes given one `nodeId`).
   */
  nodeIdShared(shared: boolean): void;
  /** Cluster mode: invocations of nodes whose lease lapsed were claimed: re-run when replayable, failed otherwise. */
  orphansClaimed(count: number): void;
  /** The server started draining (it refuses new connections from now on). */
  drainStarted(): void;
  /** A running session had no attachment for `detachedMs` (`limits.detachedSessionTimeoutMs`): its streams are being cancelled. */
  sessionGivenUp(session: SessionIdentity, detachedMs: number): void;
  /** A replayable invocation found interrupted is run again from the start; `attempt` is its run number (2 on the first re-run). */
  replayStarted(session: SessionIdentity, attempt: number): void;
  /** A re-run produced other output, another result or another journal step than the run before: the invocation fails. */
  replayDiverged(session: SessionIdentity): void;
}

const NOOP_ATTACHMENT: AttachmentObserver = { revoked() {}, violation() {}, ended() {} };

export const NOOP_OBSERVER: ServerObserver = {
  sessionStarted() {},
  sessionFinished() {},
  invocationsRunning() {},
  attached: () => NOOP_ATTACHMENT,
  attachRejected() {},
  violation() {},
  inputAccepted() {},
  outputRecorded() {},
  outputSent() {},
  storeCommitted() {},
  storeOutage() {},
  backpressure() {},
  connectionOpened() {},
  connectionClosed() {},
  connectionSilent() {},
  principalLimitReached() {},
  leaseHeartbeat() {},
  nodeIdShared() {},
  orphansClaimed() {},
  drainStarted() {},
  sessionGivenUp() {},
  replayStarted() {},
  replayDiverged() {},
};

/** Part of an observer: every method left out is a no-op. */
export type PartialObserver = Partial<ServerObserver>;

/** One observer that calls each of `observers` in turn (none: the no-op). */
export function composeObservers(observers: readonly PartialObserver[]): ServerObserver {
  if (observers.length === 0) return NOOP_OBSERVER;
  const all = observers.map((o) => ({ ...NOOP_OBSERVER, ...o }) as ServerObserver);
  if (all.length === 1) return all[0] as ServerObserver;
  return {
    sessionStarted: (s) => all.forEach((o) => o.sessionStarted(s)),
    sessionFinished: (s, outcome, ms) => all.forEach((o) => o.sessionFinished(s, outcome, ms)),
    invocationsRunning: (d) => all.forEach((o) => o.invocationsRunning(d)),
    attached: (event) => {
      const each = all.map((o) => o.attached(event));
      return {
        revoked: () => each.forEach((a) => a.revoked()),
        violation: (code, status) => each.forEach((a) => a.violation(code, status)),
        ended: (reason) => each.forEach((a) => a.ended(reason)),
      };
    },
    attachRejected: (code, op) => all.forEach((o) => o.attachRejected(code, op)),
    violation: (code, status) => all.forEach((o) => o.violation(code, status)),
    inputAccepted: (kind, items, bytes) => {
      for (const o of all) o.inputAccepted(kind, items, bytes);
    },
    outputRecorded: (kind, items, bytes) => {
      for (const o of all) o.outputRecorded(kind, items, bytes);
    },
    outputSent: (kind, items, bytes) => {
      for (const o of all) o.outputSent(kind, items, bytes);
    },
    storeCommitted: (seconds, writes) => all.forEach((o) => o.storeCommitted(seconds, writes)),
    storeOutage: (event) => all.forEach((o) => o.storeOutage(event)),
    backpressure: (reason) => all.forEach((o) => o.backpressure(reason)),
    connectionOpened: () => all.forEach((o) => o.connectionOpened()),
    connectionClosed: () => all.forEach((o) => o.connectionClosed()),
    connectionSilent: (reason) => all.forEach((o) => o.connectionSilent(reason)),
    principalLimitReached: (limit) => all.forEach((o) => o.principalLimitReached(limit)),
    leaseHeartbeat: (ok) => all.forEach((o) => o.leaseHeartbeat(ok)),
    nodeIdShared: (shared) => all.forEach((o) => o.nodeIdShared(shared)),
    orphansClaimed: (count) => all.forEach((o) => o.orphansClaimed(count)),
    drainStarted: () => all.forEach((o) => o.drainStarted()),
    sessionGivenUp: (s, ms) => all.forEach((o) => o.sessionGivenUp(s, ms)),
    replayStarted: (s, attempt) => all.forEach((o) => o.replayStarted(s, attempt)),
    replayDiverged: (s) => all.forEach((o) => o.replayDiverged(s)),
  };
}

/** The public identifiers of a stored session. */
export function identityOf(record: SessionIdentity): SessionIdentity {
  return {
    sessionId: record.sessionId,
    application: record.application,
    environment: record.environment,
    agentType: record.agentType,
    method: record.method,
  };
}

/**
 * Prometheus metrics for one server (prom-client), as a `ServerObserver`.
 * Every label set is bounded: operations, public error codes, close
 * statuses, element kinds and backpressure reasons are closed sets; no
 * session id, token or name chosen by a client is ever a label. The
 * per-item counters use label children resolved once, so the hot path is
 * one addition.
 *
 * The registry is the server's own (not prom-client's global one) unless
 * one is given, so several servers in one process do not collide.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { ErrorCode } from "@golem-stream/wire";
import type { ElementKind } from "../store/session-store.js";
import type { AttachmentObserver, BackpressureReason, PartialObserver } from "./server-observer.js";

export interface MetricsOptions {
  /** Register into this registry (default: a new one per server). */
  readonly registry?: Registry;
  /** Also collect prom-client's process metrics (CPU, memory, event loop lag; default false). */
  readonly processMetrics?: boolean;
  /** Prefix of every metric name (default `golem_stream_`). */
  readonly prefix?: string;
}

/** Store commit latency buckets (seconds): a synced SQLite group takes 0.1–50 ms on most disks. */
const COMMIT_SECONDS_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** Outages: a dropped connection (well under a second) to a failover, a restart, or one that outlasted the grace. */
const OUTAGE_SECONDS_BUCKETS = [0.1, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300];
const GROUP_SIZE_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];
const SESSION_SECONDS_BUCKETS = [0.01, 0.1, 1, 10, 60, 300, 1800, 3600, 21600, 86400];
const KINDS: readonly ElementKind[] = ["value", "u8", "binary"];

interface KindCounters {
  readonly items: Counter.Internal;
  readonly bytes: Counter.Internal;
}

export class PrometheusMetrics {
  readonly registry: Registry;
  readonly observer: PartialObserver;
  readonly #prefix: string;

  constructor(options: MetricsOptions = {}) {
    const registry = options.registry ?? new Registry();
    const p = options.prefix ?? "golem_stream_";
    this.#prefix = p;
    this.registry = registry;
    const registers = [registry];
    if (options.processMetrics === true) collectDefaultMetrics({ register: registry });

    const started = new Counter({ name: `${p}sessions_started_total`, help: "Sessions created (their start committed).", registers });
    const finished = new Counter({
      name: `${p}sessions_finished_total`,
      help: "Sessions whose finish this process committed, by outcome (success or the failure's public code).",
      labelNames: ["outcome"] as const,
      registers,
    });
    const duration = new Histogram({
      name: `${p}session_duration_seconds`,
      help: "Time from a session's start to its finish, by outcome.",
      labelNames: ["outcome"] as const,
      buckets: SESSION_SECONDS_BUCKETS,
      registers,
    });
    const running = new Gauge({ name: `${p}sessions_running`, help: "Invocations running in this process.", registers });
    const attachments = new Counter({
      name: `${p}attachments_total`,
      help: "Attachments decided, by operation (start, replay, resume, takeover).",
      labelNames: ["operation"] as const,
      registers,
    });
    const rejections = new Counter({
      name: `${p}attachment_rejections_total`,
      help: "Attaches (or upgrades, or catalogue requests: operation discover, or connections before any request: operation connection) refused, by public code and by the operation the first message asked for.",
      labelNames: ["code", "operation"] as const,
      registers,
    });
    const violations = new Counter({
      name: `${p}violations_total`,
      help: "Connections closed for breaking the protocol, by public code and WebSocket close status.",
      labelNames: ["code", "close_status"] as const,
      registers,
    });
    const revocations = new Counter({ name: `${p}revocations_total`, help: "Attachments revoked (attachmentRevoked sent).", registers });
    /** Items and payload bytes by element kind: the observer call that counts one batch of them. */
    const counters = (
      direction: "input" | "output" | "output_sent",
      what: string,
    ): ((kind: ElementKind, items: number, bytes: number) => void) => {
      const items = new Counter({
        name: `${p}${direction}_items_total`,
        help: `${what} items, by element kind (a u8 item is one byte).`,
        labelNames: ["kind"] as const,
        registers,
      });
      const bytes = new Counter({
        name: `${p}${direction}_bytes_total`,
        help: `${what} payload bytes, by element kind.`,
        labelNames: ["kind"] as const,
        registers,
      });
      const byKind = {} as Record<ElementKind, KindCounters>;
      for (const kind of KINDS) byKind[kind] = { items: items.labels(kind), bytes: bytes.labels(kind) };
      return (kind, count, size) => {
        const c = byKind[kind];
        c.items.inc(count);
        c.bytes.inc(size);
      };
    };
    const input = counters("input", "Input accepted from clients:");
    const output = counters("output", "Output recorded by producers:");
    const sent = counters("output_sent", "Output handed to clients' connections (again after every resume or takeover):");
    const commitSeconds = new Histogram({
      name: `${p}store_commit_seconds`,
      help: "Time to commit one group of store writes (payload files, transaction and sync).",
      buckets: COMMIT_SECONDS_BUCKETS,
      registers,
    });
    const groupSize = new Histogram({
      name: `${p}store_commit_group_size`,
      help: "Writes committed together in one store transaction.",
      buckets: GROUP_SIZE_BUCKETS,
      registers,
    });
    const storeUnavailable = new Gauge({
      name: `${p}store_unavailable`,
      help: "1 while the store cannot reach its database and work waits for it (within the outage grace, or failing past it), else 0.",
      registers,
    });
    const outageSeconds = new Histogram({
      name: `${p}store_outage_seconds`,
      help: "Length of each store outage that ended: from the first failure to the next answer.",
      buckets: OUTAGE_SECONDS_BUCKETS,
      registers,
    });
    const storeRetries = new Counter({
      name: `${p}store_retries_total`,
      help: "Store writes retried, and change-feed reconnects attempted, because the database could not be reached.",
      registers,
    });
    const outageFailures = new Counter({
      name: `${p}store_outage_failures_total`,
      help: "Store writes failed because the database stayed unreachable for longer than the outage grace (their invocations fail with invocation-failed).",
      registers,
    });
    storeUnavailable.set(0);
    const backpressure = new Counter({
      name: `${p}backpressure_pauses_total`,
      help: "Times the server paused a client or a producer, by reason (inbound-queue, session-budget, node-budget, socket-buffer, input-queue, output-window).",
      labelNames: ["reason"] as const,
      registers,
    });
    const connections = new Gauge({ name: `${p}connections_open`, help: "Session WebSockets open.", registers });
    const silent = new Counter({
      name: `${p}connections_silent_total`,
      help: "Session WebSockets the server closed for saying nothing, by reason (first-message: none within limits.firstMessageTimeoutMs; ping: two pings unanswered).",
      labelNames: ["reason"] as const,
      registers,
    });
    const principalRefusals = new Counter({
      name: `${p}principal_limit_refusals_total`,
      help: "Upgrades, starts and items refused because their principal held as much as one may, by limit (connections: limits.maxConnectionsPerPrincipal, overloaded; sessions: limits.maxRunningSessionsPerPrincipal, overloaded; stored-bytes: limits.maxStoredBytesPerPrincipal, limit-exceeded, a refused item fails its invocation).",
      labelNames: ["limit"] as const,
      registers,
    });
    const leaseHeld = new Gauge({
      name: `${p}cluster_lease_held`,
      help: "Cluster mode: 1 while the last lease heartbeat succeeded, 0 after a failed one.",
      registers,
    });
    const nodeIdShared = new Gauge({
      name: `${p}cluster_node_id_shared`,
      help: "Cluster mode: 1 while another process renews this node id's lease too (two processes given one node id: give each its own), 0 otherwise; read at each heartbeat.",
      registers,
    });
    const heartbeatFailures = new Counter({
      name: `${p}cluster_heartbeat_failures_total`,
      help: "Cluster mode: lease heartbeats that failed.",
      registers,
    });
    const orphans = new Counter({
      name: `${p}cluster_orphans_claimed_total`,
      help: "Cluster mode: invocations of nodes whose lease lapsed that this node claimed: re-run when replayable, failed otherwise.",
      registers,
    });
    const draining = new Gauge({ name: `${p}draining`, help: "1 once the server has started draining.", registers });
    const givenUp = new Counter({
      name: `${p}sessions_given_up_total`,
      help: "Running sessions that had no attachment for limits.detachedSessionTimeoutMs; their streams were cancelled with transport-detached.",
      registers,
    });
    const replays = new Counter({
      name: `${p}replays_total`,
      help: "Replayable invocations found interrupted (a restart) and run again from the start (docs/durable-execution.md).",
      registers,
    });
    const divergences = new Counter({
      name: `${p}replay_divergences_total`,
      help: "Re-runs that produced other output, another result or another journal step than the run before: the invocation failed as non-deterministic.",
      registers,
    });
    draining.set(0);
    connections.set(0);
    running.set(0);

    const ended: AttachmentObserver = { revoked: () => revocations.inc(), violation: violated, ended() {} };
    function violated(code: ErrorCode, closeStatus: number): void {
      violations.inc({ code, close_status: String(closeStatus) });
    }
    this.observer = {
      sessionStarted: () => started.inc(),
      sessionFinished: (_session, outcome, durationMs) => {
        finished.inc({ outcome });
        duration.observe({ outcome }, durationMs / 1000);
      },
      invocationsRunning: (delta) => running.inc(delta),
      attached: (event) => {
        attachments.inc({ operation: event.operation });
        return ended;
      },
      attachRejected: (code, operation) => rejections.inc({ code, operation }),
      violation: violated,
      inputAccepted: input,
      outputRecorded: output,
      outputSent: sent,
      storeCommitted: (seconds, writes) => {
        commitSeconds.observe(seconds);
        groupSize.observe(writes);
      },
      storeOutage: (event) => {
        if (event.kind === "unavailable") storeUnavailable.set(1);
        else if (event.kind === "retry") storeRetries.inc();
        else if (event.kind === "grace-exceeded") outageFailures.inc(event.writes);
        else {
          storeUnavailable.set(0);
          outageSeconds.observe(event.seconds);
        }
      },
      backpressure: (reason: BackpressureReason) => backpressure.inc({ reason }),
      connectionOpened: () => connections.inc(),
      connectionClosed: () => connections.dec(),
      connectionSilent: (reason) => silent.inc({ reason }),
      principalLimitReached: (limit) => principalRefusals.inc({ limit }),
      leaseHeartbeat: (ok) => {
        leaseHeld.set(ok ? 1 : 0);
        if (!ok) heartbeatFailures.inc();
      },
      nodeIdShared: (shared) => nodeIdShared.set(shared ? 1 : 0),
      orphansClaimed: (count) => orphans.inc(count),
      drainStarted: () => draining.set(1),
      sessionGivenUp: () => givenUp.inc(),
      replayStarted: () => replays.inc(),
      replayDiverged: () => divergences.inc(),
    };
  }

  /** The node's byte budget (`limits.maxQueuedBytesPerNode`), read at every scrape. */
  watchNodeBudget(read: () => { readonly held: number; readonly capacity: number }): void {
    const p = this.#prefix;
    const registers = [this.registry];
    new Gauge({
      name: `${p}node_buffered_bytes`,
      help: "Bytes all sessions and connections hold in memory (received, undecoded; held by session byte permits); no socket is read while it is at its limit.",
      registers,
      collect() {
        this.set(read().held);
      },
    });
    new Gauge({
      name: `${p}node_buffered_bytes_limit`,
      help: "The node's byte budget (limits.maxQueuedBytesPerNode).",
      registers,
      collect() {
        this.set(read().capacity);
      },
    });
  }
}

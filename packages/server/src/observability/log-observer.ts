/**
 * One log line per event an operator cares about, through the server's
 * `Logger` (console-like, or pino through `loggerFromPino`). Every line has
 * an `event` field (`session.start`, `attach`, `attach.rejected`, ...) and,
 * when it concerns a session, `session`: the store's id, never a token.
 * Routine traffic (items, commits) is not logged: metrics count it.
 */
import type { Logger } from "../options.js";
import type { AttachEvent, AttachmentObserver, PartialObserver, SessionIdentity } from "./server-observer.js";

/** The fields of every log line about a session: its store id and what was invoked (docs/operations.md). */
export function sessionFields(session: SessionIdentity): Record<string, string> {
  return {
    session: session.sessionId,
    application: session.application,
    environment: session.environment,
    agentType: session.agentType,
    method: session.method,
  };
}

const ATTACH_MESSAGES: Record<AttachEvent["operation"], string> = {
  start: "session attached (start)",
  replay: "session attached (exact replay)",
  resume: "session resumed",
  takeover: "session taken over",
};

export function logObserver(logger: Logger): PartialObserver {
  const debug = logger.debug?.bind(logger);
  return {
    sessionStarted: (session) => logger.info("session started", { event: "session.start", ...sessionFields(session) }),
    sessionFinished: (session, outcome, durationMs) => {
      const fields = { event: "session.finish", ...sessionFields(session), outcome, durationMs };
      if (outcome === "success") logger.info("session finished", fields);
      else logger.warn("session finished", fields);
    },
    attached: (event): AttachmentObserver => {
      const session = event.session.sessionId;
      const generation = event.generation.toString();
      logger.info(ATTACH_MESSAGES[event.operation], {
        event: "attach",
        operation: event.operation,
        generation,
        ...sessionFields(event.session),
      });
      return {
        revoked: () => logger.info("attachment revoked", { event: "attach.revoked", session, generation }),
        violation: (code, closeStatus) => logger.warn("protocol violation", { event: "violation", session, generation, code, closeStatus }),
        ended: (reason) => debug?.("attachment ended", { event: "attach.end", session, generation, reason }),
      };
    },
    attachRejected: (code, operation) => {
      const fields = { event: "attach.rejected", operation, code };
      if (code === "internal-error") logger.error("attach rejected", fields);
      else logger.info("attach rejected", fields);
    },
    violation: (code, closeStatus) => logger.warn("protocol violation", { event: "violation", code, closeStatus }),
    storeOutage: (event) => {
      if (event.kind === "unavailable") {
        logger.warn("store unavailable: writes and reads wait for it, up to the outage grace", {
          event: "store.unavailable",
          error: event.error,
        });
      } else if (event.kind === "available") {
        logger.warn("store available again", { event: "store.available", seconds: event.seconds });
      } else if (event.kind === "grace-exceeded") {
        logger.error("store unavailable for longer than the outage grace: the writes waiting for it failed, and their invocations fail", {
          event: "store.outage-grace-exceeded",
          seconds: event.seconds,
          writes: event.writes,
          error: event.error,
        });
      } else {
        debug?.("store write retried", { event: "store.retry", delayMs: event.delayMs, error: event.error });
      }
    },
    leaseHeartbeat: (ok) => {
      if (!ok) logger.warn("lease heartbeat failed", { event: "cluster.heartbeat-failed" });
    },
    orphansClaimed: (count) =>
      logger.warn("claimed the invocations of a node whose lease lapsed: re-run when replayable, failed otherwise", {
        event: "cluster.orphans-claimed",
        count,
      }),
    drainStarted: () => logger.info("draining", { event: "drain" }),
    principalLimitReached: (limit) => logger.info("refused a caller at its per-principal bound", { event: "principal.limit", limit }),
    connectionSilent: (reason) =>
      logger.info(reason === "ping" ? "dropped a connection that answered no ping" : "closed a connection that sent no first message", {
        event: "connection.silent",
        reason,
      }),
    replayStarted: (session, attempt) =>
      logger.info("re-running an interrupted replayable invocation", { event: "invocation.replay", ...sessionFields(session), attempt }),
    replayDiverged: (session) =>
      logger.warn("a re-run diverged from the run before (non-deterministic): the invocation fails", {
        event: "invocation.replay-diverged",
        ...sessionFields(session),
      }),
    sessionGivenUp: (session, detachedMs) =>
      logger.warn("session given up: no attachment for detachedSessionTimeoutMs; its streams end transport-detached", {
        event: "session.given-up",
        ...sessionFields(session),
        detachedMs,
      }),
  };
}

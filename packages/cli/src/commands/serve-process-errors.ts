/**
 * What `serve` does with a promise rejection nobody handled. In a server of the operator's own
 * agents that is almost always an agent's forgotten `catch` (a `fetch(…).then(…)` left dangling),
 * and Node's default, ending the process, would take every invocation in flight with it (those
 * that are not replayable fail at the next start). The rejection belongs to no session the server
 * could fail instead, so it is logged, with its stack, and the server serves on. An uncaught
 * exception is not caught here: a throw that unwound some code half-way may have left the process
 * in a state nothing can vouch for, so Node's ending of the process stands.
 */
import type { CliLogger } from "../io/logger.js";

/** Starts logging unhandled rejections as `process.unhandled-rejection` (error); the returned function stops it. */
export function logUnhandledRejections(logger: CliLogger): () => void {
  const onRejection = (reason: unknown): void => {
    logger.error("a promise rejection nobody handled (an agent's missing catch?): logged, and the server serves on", {
      event: "process.unhandled-rejection",
      error: describe(reason),
      ...(reason instanceof Error && typeof reason.stack === "string" ? { stack: reason.stack } : {}),
    });
  };
  process.on("unhandledRejection", onRejection);
  return () => void process.off("unhandledRejection", onRejection);
}

function describe(reason: unknown): string {
  if (reason instanceof Error) return `${reason.name}: ${reason.message}`;
  try {
    return String(reason);
  } catch {
    return Object.prototype.toString.call(reason);
  }
}

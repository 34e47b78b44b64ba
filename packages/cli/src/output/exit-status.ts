/**
 * How a client failure maps to the CLI's exit codes and a one-line message.
 */
import { isClientError } from "@golem-stream/client";
import { EXIT } from "../exit-codes.js";
import type { ExitCode } from "../exit-codes.js";

export interface Failure {
  readonly exitCode: ExitCode;
  readonly message: string;
  /** The public protocol code, when the peer sent one. */
  readonly code?: string;
}

export interface FailureContext {
  /** This process lost the session at some point (a reconnect, or `resume` after a crash). */
  readonly wasAway?: boolean;
  /** `resume`: another process ran the invocation before, and its inputs' sources stayed there. */
  readonly resumed?: boolean;
}

/** The server's whole explanation of a failure it does not explain (docs/protocol/server.md, "Restart"). */
const SERVER_GENERIC_FAILURE = "invocation failed";

export function failureOf(error: unknown, context: FailureContext = {}): Failure {
  const failure = describeFailure(error, context);
  return isClientError(error) && error.code !== undefined ? { ...failure, code: error.code } : failure;
}

function describeFailure(error: unknown, context: FailureContext): Failure {
  if (!isClientError(error)) {
    return { exitCode: EXIT.connectionLost, message: error instanceof Error ? error.message : String(error) };
  }
  const code = error.code === undefined ? "" : ` (${error.code})`;
  switch (error.kind) {
    case "rejected":
      return { exitCode: EXIT.rejected, message: `rejected${code}: ${error.message}` };
    case "invocation-failed": {
      if (error.message !== "" && error.message !== SERVER_GENERIC_FAILURE) {
        return { exitCode: EXIT.invocationFailed, message: `invocation failed${code}: ${error.message}` };
      }
      // The server says no more than this for an agent that threw (an input cancelled as
      // source-unavailable too) and for a restart (which fails every invocation it was running);
      // only this process knows it was away, and not which of them it was.
      if (context.wasAway !== true) {
        return { exitCode: EXIT.invocationFailed, message: `the invocation failed on the server${code}, which gives no reason (its log has it)` };
      }
      const causes = context.resumed === true
        ? "a server restart (it fails every invocation it was running), or an input only the interrupted process could feed (stdin), which resume had to cancel (source-unavailable)"
        : "a server restart, which fails every invocation it was running";
      return {
        exitCode: EXIT.invocationFailed,
        message: `the invocation failed on the server${code} while this process was away from it, without a reason (the server's log has it); it may have been ${causes}. The output it produced before was delivered`,
      };
    }
    case "stream-failed":
      return { exitCode: EXIT.invocationFailed, message: `ended with an error${code}: ${error.message}` };
    case "stream-cancelled":
      return { exitCode: EXIT.invocationFailed, message: `was cancelled${error.reason === undefined ? "" : ` (${error.reason})`}` };
    case "revoked":
      return { exitCode: EXIT.connectionLost, message: "another process took this session over" };
    case "server-violation":
      return { exitCode: EXIT.connectionLost, message: `the server broke the protocol: ${error.message}` };
    case "checkpoint-failed":
      // Like stdout failing (EX_IOERR): the run stopped before output could pass the saved state.
      return {
        exitCode: EXIT.outputFailed,
        message: `${causeMessage(error)}; stopped before printing past it, without cancelling anything: \`golem-stream resume\` continues from the last checkpoint written, if there is one`,
      };
    case "aborted":
      return { exitCode: EXIT.interrupted, message: "interrupted" };
    case "invalid-argument":
      return { exitCode: EXIT.usage, message: error.message };
    case "contract-mismatch":
      // A typed contract that disagrees with the server's catalogue: nothing was sent, the caller must change.
      return { exitCode: EXIT.usage, message: error.message };
    case "connection-lost":
      return { exitCode: EXIT.connectionLost, message: `connection lost: ${error.message}` };
  }
}

function causeMessage(error: Error): string {
  return error.cause instanceof Error ? error.cause.message : error.message;
}

/**
 * How a client failure maps to the CLI's exit codes and a one-line message.
 */
import { isClientError } from "@golem-stream/client";
import { EXIT } from "../exit-codes.js";
import type { ExitCode } from "../exit-codes.js";

export interface Failure {
  readonly exitCode: ExitCode;
  readonly message: string;
}

export function failureOf(error: unknown): Failure {
  if (!isClientError(error)) {
    return { exitCode: EXIT.connectionLost, message: error instanceof Error ? error.message : String(error) };
  }
  const code = error.code === undefined ? "" : ` (${error.code})`;
  switch (error.kind) {
    case "rejected":
      return { exitCode: EXIT.rejected, message: `rejected${code}: ${error.message}` };
    case "invocation-failed":
      return { exitCode: EXIT.invocationFailed, message: `invocation failed${code}: ${error.message}` };
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

/**
 * How a client failure maps to the CLI's exit codes and a one-line message.
 */
import { isClientError } from "@golem-stream/client";
import { isErrorCode } from "@golem-stream/wire";
import { EXIT } from "../exit-codes.js";
import { shellWord } from "../io/shell-word.js";
import type { ExitCode } from "../exit-codes.js";
import { resumeCommand, type HintedConnection } from "../catalogue-selector.js";
import { plainHttpFailure, tlsFailure, tlsUrl } from "../tls-failure.js";

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
  /**
   * Whether an invocation may exist on the server: `none` when every attempt was refused
   * (a refused start runs nothing, protocol 6.2), `unknown` when a start went unanswered,
   * `accepted` once the server accepted one. Default `accepted`.
   */
  readonly started?: "none" | "unknown" | "accepted";
  /** The last retryable error the server answered this process with (it was reachable then). */
  readonly serverError?: string;
  /** The checkpoint file `resume` continues from, when there is one. */
  readonly checkpoint?: string;
  /** How the user types this CLI, for the commands the message suggests (io/command-name.ts). Default `golem-stream`. */
  readonly command?: string;
  /** The server and catalogue bound in effect, which the `resume` the message suggests carries (`resumeCommand`). */
  readonly connection?: HintedConnection;
  /**
   * An input's failure already reported on its own line (`invoke`'s stdin): a failure of the
   * invocation caused by it says no more of it than that the input was cancelled.
   */
  readonly inputFailureShown?: unknown;
}

/** The server's whole explanation of a failure it does not explain (docs/protocol/server.md, "Restart"). */
const SERVER_GENERIC_FAILURE = "invocation failed";

/**
 * The client's message for that failure after this process was away from the server: the
 * server's words, then the client's note that a restart may be why (docs/protocol/client.md §3).
 * It is said here in the CLI's own words, which know more (a resume, its inputs).
 */
const CLIENT_AWAY_NOTE = `${SERVER_GENERIC_FAILURE} (the invocation failed on the server while this process was away from it`;

/** The server's message of a failure, without what the client added for a process that was away. */
function serverMessage(message: string): string {
  return message.startsWith(CLIENT_AWAY_NOTE) ? SERVER_GENERIC_FAILURE : message;
}

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
      return { exitCode: EXIT.rejected, message: `rejected${code}: ${rejectionText(error.code, error.message, context)}` };
    case "invocation-failed": {
      if (context.inputFailureShown !== undefined && error.cause === context.inputFailureShown) {
        const message = withoutInputFailure(error.message, error.cause);
        return message === "" || message === SERVER_GENERIC_FAILURE
          ? { exitCode: EXIT.invocationFailed, message: `the invocation failed on the server${code} after its input was cancelled` }
          : { exitCode: EXIT.invocationFailed, message: `invocation failed${code}: ${message}` };
      }
      const said = serverMessage(error.message);
      if (said !== "" && said !== SERVER_GENERIC_FAILURE) {
        return { exitCode: EXIT.invocationFailed, message: `invocation failed${code}: ${said}` };
      }
      // The server says no more than this for an agent that threw (an input cancelled as
      // source-unavailable too) and for a restart (which fails every invocation it was running that is not replayable);
      // only this process knows it was away, and not which of them it was.
      if (context.wasAway !== true) {
        // A server that answered with errors was there all along: a restart is not a likely cause.
        const before =
          context.serverError === undefined
            ? ""
            : `; before, it had answered this process with ${context.serverError}, so it may be failing (a full disk, a broken store)`;
        return {
          exitCode: EXIT.invocationFailed,
          message: `the invocation failed on the server${code}, which gives no reason (its log has it)${before}`,
        };
      }
      const causes =
        context.resumed === true
          ? "a server restart (it fails every invocation it was running that is not replayable), or an input only the interrupted process could feed (stdin, or a file it read), which resume had to cancel (source-unavailable)"
          : "a server restart, which fails every invocation it was running that is not replayable";
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
    case "checkpoint-failed": {
      // Like stdout failing (EX_IOERR): the run stopped before output could pass the saved state.
      const resume =
        context.checkpoint === undefined ? `${context.command ?? "golem-stream"} resume` : resumeOf(context.checkpoint, context);
      return {
        exitCode: EXIT.outputFailed,
        message: `${causeMessage(error)}; stopped before printing past it, without cancelling anything: \`${resume}\` continues from the last checkpoint written, if there is one`,
      };
    }
    case "aborted":
      return { exitCode: EXIT.interrupted, message: "interrupted" };
    case "invalid-argument":
      return { exitCode: EXIT.usage, message: error.message };
    case "contract-mismatch":
      // A typed contract that disagrees with the server's catalogue: nothing was sent, the caller must change.
      return { exitCode: EXIT.usage, message: error.message };
    case "connection-lost": {
      // The client's TLS failure, not retried: said for the command line (NODE_EXTRA_CA_CERTS, not wsTransport's tls).
      const tls = tlsFailure(error.cause);
      if (tls !== undefined) return { exitCode: EXIT.connectionLost, message: `cannot reach the server: ${tls}. ${leftBehind(context)}` };
      // An http:// --url of a TLS port: the resume suggested has the https:// one, which would work.
      const plain = plainHttpFailure(error.cause);
      if (plain !== undefined) {
        const overTls =
          context.connection === undefined
            ? context
            : { ...context, connection: { ...context.connection, url: tlsUrl(context.connection.url) } };
        return { exitCode: EXIT.connectionLost, message: `cannot reach the server: ${plain}. ${leftBehind(overTls)}` };
      }
      const refusal = refusalOf(error);
      // Given up like after refusals: the user needs to hear what may be left running and how to go on.
      if (refusal === undefined)
        return { exitCode: EXIT.connectionLost, message: `connection lost: ${error.message}. ${leftBehind(context)}` };
      return {
        exitCode: EXIT.connectionLost,
        message: `the server is reachable but kept refusing with an error that may pass; ${error.message}. ${leftBehind(context)}`,
      };
    }
  }
}

/** The words of a rejection: the server's, or, where the CLI knows more, its own. */
function rejectionText(code: string | undefined, message: string, context: FailureContext): string {
  if (code === "idempotency-conflict") return idempotencyConflict(context);
  // A session token refused on a return to the session (resume, a reconnect): the server gives no
  // reason on purpose (protocol section 10), but only two causes are the user's to fix.
  if (code === "invalid-token" && (context.checkpoint !== undefined || context.wasAway === true))
    return invalidSessionToken(message, context);
  return message;
}

/** A token of this invocation refused (`invalid-token`) on the way back to it: the two causes a user can fix. */
function invalidSessionToken(message: string, context: FailureContext): string {
  const command = context.command ?? "golem-stream";
  const inspect =
    context.checkpoint === undefined
      ? ""
      : ` (\`${command} token inspect\` of a token in ${shellWord(context.checkpoint)}, its sessionToken or a cursor, names the key)`;
  return (
    `${message}: the server refused a token of this invocation (its session token, or an output stream's cursor). ` +
    "They are valid only for the caller that started the invocation " +
    `(the same bearer token, or for a JWT the same subject) and only while the server's keyring holds the key that signed them${inspect}: ` +
    "return to it with the token that started it, at a server of the same deployment"
  );
}

/**
 * A start refused because its idempotency key is bound to another invocation: told here rather
 * than by the server's message, whose advice (a takeover, `resume`) is for whoever holds that
 * invocation's saved state. This command's checkpoint, if any, holds only the refused start,
 * which `resume` would send again and have refused the same way.
 */
function idempotencyConflict(context: FailureContext): string {
  const command = context.command ?? "golem-stream";
  const refused =
    "the idempotency key is already bound to another invocation of this agent (a key makes a start happen once), so this start was refused and ran nothing";
  if (context.checkpoint === undefined) {
    return `${refused}: start it again with another --idempotency-key; if that invocation was run with --checkpoint, \`${command} resume\` of its file continues it`;
  }
  const file = shellWord(context.checkpoint);
  return `${refused}. ${file} holds only this refused start, which \`${resumeOf(context.checkpoint, context)}\` would send again and have refused the same way: delete ${file}, and start the invocation again with another --idempotency-key`;
}

/** The `resume` of `checkpoint`, as the user types the CLI here, with the connection in effect. */
function resumeOf(checkpoint: string, context: FailureContext): string {
  return resumeCommand(checkpoint, context.connection, context.command ?? "golem-stream");
}

/**
 * The server's message of a failure that followed an input's failure: the client adds
 * ` (after an input of this call failed here: <its message>)` to it (its `cause`).
 */
function withoutInputFailure(message: string, cause: unknown): string {
  const added = ` (after an input of this call failed here: ${cause instanceof Error ? cause.message : String(cause)})`;
  return message.endsWith(added) ? message.slice(0, -added.length) : message;
}

/** The last attempt's refusal behind a give-up, when the server answered it (it was reachable). */
function refusalOf(error: Error): string | undefined {
  const code = (error.cause as { readonly code?: unknown } | undefined)?.code;
  return isErrorCode(code) ? code : undefined;
}

/** After giving up: what may be running on the server, and what the user can do about it. */
function leftBehind(context: FailureContext): string {
  const resume = context.checkpoint === undefined ? undefined : `\`${resumeOf(context.checkpoint, context)}\``;
  switch (context.started ?? "accepted") {
    case "none":
      return "Nothing was started on the server (a refused start runs nothing): run the command again once the server is healthy";
    case "unknown":
      return resume === undefined
        ? "A start went unanswered, so the server may have started the invocation; without a checkpoint nothing can continue it"
        : `A start went unanswered, so the server may have started the invocation: ${resume} continues it`;
    case "accepted":
      return resume === undefined
        ? "The invocation may keep running on the server; without a checkpoint nothing can continue it"
        : `The invocation may keep running on the server: ${resume} continues it`;
  }
}

function causeMessage(error: Error): string {
  return error.cause instanceof Error ? error.cause.message : error.message;
}

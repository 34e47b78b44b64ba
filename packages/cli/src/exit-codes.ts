/**
 * The closed set of process exit codes of `golem-stream`. Scripts branch on
 * these, so they are part of the public contract: a code never changes
 * meaning, and new outcomes get new numbers.
 */
export const EXIT = {
  /** The command did what was asked; for `invoke`/`resume`, the invocation finished successfully. */
  success: 0,
  /** The invocation was accepted but failed: `invocationFinished` failure or an output stream ended in error. */
  invocationFailed: 1,
  /** The command line, an argument value, an input file or a checkpoint is unusable. Nothing was sent. */
  usage: 2,
  /** The server refused: handshake failure (authentication) or `invocationRejected`. */
  rejected: 3,
  /** The connection was lost and could not be re-established; `resume` with the checkpoint continues. */
  connectionLost: 4,
  /** `conformance`: the suite ran and at least one check failed (the report says which). */
  checksFailed: 5,
  /**
   * `serve --agents`: the module could not be loaded or its default export is no usable catalogue
   * (EX_CONFIG from sysexits.h): nothing was started, and the one line on stderr names the file
   * and the problem.
   */
  agentsInvalid: 78,
  /**
   * stdout or the checkpoint could not be written (EX_IOERR); with a checkpoint, `resume` continues
   * from the last saved item; without one a failed stdout cancels the invocation (nothing could resume it).
   */
  outputFailed: 74,
  /**
   * Interrupted by SIGINT/SIGTERM/SIGHUP; the session keeps running on the server and can be resumed.
   * `serve` stopped while its `--agents` module was still loading, before it started anything.
   */
  interrupted: 130,
  /**
   * stdout was closed by its reader (`| head`): 128 + SIGPIPE, what a shell reports for a program
   * a closed pipe stopped. Without a checkpoint the invocation was cancelled, with one it keeps running.
   */
  stdoutClosed: 141,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/**
 * A failure the CLI reports to the user: a one-line message on stderr and an
 * exit code. Anything else that escapes a command is a bug and exits 70.
 */
export class CliError extends Error {
  override readonly name = "CliError";
  readonly exitCode: ExitCode;
  /** The public protocol error code, when the failure came from the peer. */
  readonly code: string | undefined;
  /** The same request may succeed if repeated (the server was unreachable, or answered 5xx). */
  readonly retryable: boolean;

  constructor(exitCode: ExitCode, message: string, options: { code?: string; cause?: unknown; retryable?: boolean } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.exitCode = exitCode;
    this.code = options.code;
    this.retryable = options.retryable ?? false;
  }
}

export function usageError(message: string, cause?: unknown): CliError {
  return new CliError(EXIT.usage, message, { cause });
}

/** Exit status for a bug: EX_SOFTWARE from sysexits.h. */
export const EXIT_INTERNAL = 70;

/**
 * What a person sees while the server is unreachable: one line when the
 * connection is lost (or cannot be made), then quiet retries; on a terminal
 * a single line counts down to the next attempt and is cleared when the
 * connection is back or the CLI gives up. Each retry is not worth a line of
 * its own: a server that is down for a minute would fill the screen.
 */
import type { CliIo } from "./cli-io.js";
import { report } from "./cli-io.js";
import { printable } from "./printable.js";
import { isErrorCode } from "@golem-stream/wire";

export interface ReconnectAttempt {
  /** Consecutive failures so far (1 for the first). */
  readonly failures: number;
  readonly delayMs: number;
  readonly cause: string;
  /**
   * The server answered this attempt with a retryable error (`internal-error`, a 5xx): it is
   * reachable, and the notice must not say otherwise. Default: inferred from `cause` (a bare
   * protocol error code, or `refused: <code>`, is an answer; anything else a lost connection).
   */
  readonly answered?: boolean;
}

/** The client's `reconnecting` cause for an attempt the server answered: its error code, or a refused upgrade. */
export function serverAnswered(cause: string): boolean {
  return isErrorCode(cause) || /^refused: /.test(cause);
}

export class ReconnectNotice {
  readonly #io: CliIo;
  readonly #maxAttempts: number;
  readonly #now: () => number;
  #away = false;
  /** The streak began with an answer from the server (a retryable error), not a lost connection. */
  #answered = false;
  #everConnected = false;
  #timer: NodeJS.Timeout | undefined;
  #countdownShown = false;

  constructor(io: CliIo, maxAttempts: number, now: () => number = Date.now) {
    this.#io = io;
    this.#maxAttempts = maxAttempts;
    this.#now = now;
  }

  reconnecting(attempt: ReconnectAttempt): void {
    if (!this.#away) {
      this.#away = true;
      this.#answered = attempt.answered ?? serverAnswered(attempt.cause);
      const what = this.#answered
        ? `the server answered with an error that may pass (${attempt.cause})`
        : `${this.#everConnected ? "connection lost" : "cannot reach the server"} (${attempt.cause})`;
      report(
        this.#io,
        `golem-stream: ${what}; retrying quietly, up to ${this.#maxAttempts} time${this.#maxAttempts === 1 ? "" : "s"} (--retries)`,
      );
    }
    if (this.#io.stderr.isTTY !== true) return;
    const due = this.#now() + attempt.delayMs;
    const draw = () => {
      const seconds = Math.max(0, Math.ceil((due - this.#now()) / 1000));
      this.#io.stderr.write(
        `\r\x1b[Kgolem-stream: attempt ${attempt.failures} of ${this.#maxAttempts} in ${seconds}s (${printable(attempt.cause)})`,
      );
      this.#countdownShown = true;
    };
    this.#stopTimer();
    draw();
    this.#timer = setInterval(draw, 1000);
    this.#timer.unref();
  }

  /** The server accepted again: the streak is over. */
  reconnected(): void {
    this.#everConnected = true;
    if (!this.#away) return;
    this.#away = false;
    this.clear();
    report(this.#io, this.#answered ? "golem-stream: the server accepted on a later attempt" : "golem-stream: reconnected");
  }

  /** Removes the countdown line, so the next line of stderr starts clean. */
  clear(): void {
    this.#stopTimer();
    if (this.#countdownShown) this.#io.stderr.write("\r\x1b[K");
    this.#countdownShown = false;
  }

  #stopTimer(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

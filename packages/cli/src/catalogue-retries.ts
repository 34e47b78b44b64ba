/**
 * `invoke`'s catalogue lookup, retried like the session connection after it:
 * a server that is restarting for a moment must not fail the call. The same
 * budget (`--retries`) and backoff as the client's reconnects (full jitter,
 * 100 ms doubling up to 5 s), the same one-line notice, and each attempt
 * bounded by `--timeout`. Only failures that asking again can fix are retried
 * (connection refused or reset, a timeout, a 5xx answer); a name that does not
 * resolve, TLS, 4xx or a document this CLI cannot read fail at once.
 */
import { DEFAULT_RECONNECT_POLICY, reconnectDelay } from "@golem-stream/client";
import type { Connection } from "./connection.js";
import { fetchCatalogue } from "./discovery.js";
import type { Catalogue } from "./discovery.js";
import { CliError, EXIT } from "./exit-codes.js";
import type { CliIo } from "./io/cli-io.js";
import { ReconnectNotice } from "./io/reconnect-notice.js";

export interface CatalogueRetryOptions {
  readonly application: string;
  readonly environment: string;
  /** Retries after the first attempt (`--retries`; 0: one attempt). */
  readonly retries: number;
  /** Bound of each attempt, ms (`--timeout`). */
  readonly timeoutMs: number;
  /** The largest catalogue read (`--max-catalogue-bytes`). */
  readonly maxCatalogueBytes: number;
}

export async function fetchCatalogueWithRetries(connection: Connection, options: CatalogueRetryOptions, io: CliIo): Promise<Catalogue> {
  const policy = { ...DEFAULT_RECONNECT_POLICY, maxAttempts: options.retries };
  const notice = new ReconnectNotice(io, options.retries);
  try {
    for (let failures = 0; ;) {
      try {
        const catalogue = await fetchCatalogue(
          connection,
          options.application,
          options.environment,
          AbortSignal.any([io.signal, AbortSignal.timeout(options.timeoutMs)]),
          options.maxCatalogueBytes,
        );
        notice.reconnected();
        return catalogue;
      } catch (error) {
        if (io.signal.aborted) throw new CliError(EXIT.interrupted, "interrupted before anything was sent", { cause: error });
        if (!(error instanceof CliError) || !error.retryable) throw error;
        failures++;
        const delayMs = reconnectDelay(policy, failures);
        if (delayMs === undefined) {
          const tried =
            options.retries === 0
              ? "not retried: --retries 0"
              : `gave up after ${options.retries} ${options.retries === 1 ? "retry" : "retries"} (--retries)`;
          throw new CliError(error.exitCode, `${error.message}; ${tried}, nothing was sent`, {
            cause: error,
            ...(error.code === undefined ? {} : { code: error.code }),
          });
        }
        // A 5xx is an answer: the server is there and failed (or a proxy before it did).
        const unreachable = /^cannot reach \S+: /;
        notice.reconnecting({
          failures,
          delayMs,
          cause: error.message.replace(unreachable, ""),
          answered: !unreachable.test(error.message),
        });
        await sleep(delayMs, io.signal);
      }
    }
  } finally {
    notice.clear();
  }
}

/** Waits `ms`, or less when `signal` aborts (the next attempt then reports the interrupt). */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

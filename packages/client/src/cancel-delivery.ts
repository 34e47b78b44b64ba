/**
 * An invocation-wide cancel on its way to the server. v1 has no
 * invocation-level cancel message (protocol 5.5): cancelling an invocation is
 * a `streamCancel` (`cancelled`) for each of its streams that has not ended,
 * and a `streamCancel` needs a channel, which only an accepted connection
 * has (protocol 8). So the caller's outcome is decided at once, while the
 * session keeps (or starts) reconnecting until the cancellations are sent —
 * or until that fails — and reports which (docs/protocol/client.md §10).
 */
import type { Attachment } from "./attachment.js";
import type { ClientError } from "./errors.js";
import type { InputFeeder } from "./input-feeder.js";
import type { OutputStream } from "./output-stream.js";

/**
 * What became of an invocation-wide cancel:
 *
 * - `delivered`: every stream of the invocation known here that had not
 *   ended was cancelled on an accepted connection (or the server ended it
 *   first, or the invocation finished); also when the start never reached
 *   the server or was rejected, so nothing runs there.
 * - `undelivered`: the cancellations could not be sent — the reconnect
 *   policy was exhausted (`connection-lost`), the session was rejected or
 *   taken over by another process (`revoked`), the handle was detached — and
 *   the streams may still be open on the server. `error` says why.
 * - `not-reached`: the method had not returned its result, and nothing the
 *   cancel could do made it. v1 cancels streams, and before its result a
 *   method has no stream but its inputs: with none open (the server answered
 *   whatever else was cancelled, and no result came within
 *   `cancelConfirmTimeoutMs`), nothing reached it; with `inputsEnded`, the
 *   server ended the inputs it had open, but it neither returned nor failed
 *   within `cancelReturnTimeoutMs` after (a method that does not read an input
 *   never sees it end). Either way it keeps running until it returns — the
 *   streams of that result are not cancelled — or until the server gives it
 *   up after its detached timeout.
 * - `invocation-succeeded`: the invocation finished as a success while the
 *   cancel was on its way, and the cancel cut none of its output streams: its
 *   method returned — before the cancel, or after it without being stopped by
 *   the inputs it ended — and every stream had ended. Nothing was cancelled
 *   that the invocation needed; its outcome on the server is `success`.
 * - `already-over`: the handle had ended (finished, failed, detached) before
 *   the cancel; nothing was sent.
 */
export type CancelOutcome =
  | { readonly kind: "delivered" }
  | { readonly kind: "undelivered"; readonly error: ClientError }
  | { readonly kind: "not-reached"; readonly inputsEnded?: true }
  | { readonly kind: "invocation-succeeded" }
  | { readonly kind: "already-over" };

export class CancelDelivery {
  /** What the caller's promises and readers reject with (kind `aborted`). */
  readonly error: ClientError;
  readonly outcome: Promise<CancelOutcome>;
  #resolve!: (outcome: CancelOutcome) => void;

  constructor(error: ClientError) {
    this.error = error;
    this.outcome = new Promise((resolve) => (this.#resolve = resolve));
  }

  settle(outcome: CancelOutcome): void {
    this.#resolve(outcome);
  }
}

/**
 * Whether the cancel has reached the server on `attachment`:
 *
 * - the connection is accepted and still open;
 * - the result has arrived (or `invocationFinished` would have ended the
 *   delivery): the streams a result exposes exist on the server only from it
 *   on, and the server sends it on every attachment once it exists
 *   (decisions §8), so they are cancelled too instead of being left to run
 *   unread until retention (unless the cancel ended no input: then the
 *   method may never return, and the wait ends `not-reached`, session.ts);
 * - every input of this process that the server knows (it has a stream
 *   token) has its terminal recorded or sent on this connection. An input
 *   nested in an item the server has not accepted yet has no token; if that
 *   item is accepted, its ACK maps the input before the parent's terminal
 *   ACK, so it is found and cancelled while this waits for the parent;
 * - every output stream known here has ended on the server or had its
 *   `streamCancel` sent on this connection. A stream known from before whose
 *   mapping this connection has not sent yet (one the re-sent result or a
 *   replayed item announces) keeps the delivery waiting for it.
 */
export function cancelReachedServer(
  attachment: Attachment,
  inputs: Iterable<InputFeeder>,
  outputs: Iterable<OutputStream>,
  resultSeen: boolean,
): boolean {
  if (!attachment.accepted || attachment.settled || !resultSeen) return false;
  for (const feeder of inputs) {
    if (feeder.streamToken !== undefined && !feeder.terminalSent) return false;
  }
  for (const stream of outputs) {
    if (!stream.serverEnded && !attachment.cancelsSent.has(stream)) return false;
  }
  return true;
}

/**
 * Whether the server has answered every cancellation it could have read on
 * `attachment`: each input it knows (it has a stream token) is terminal
 * there (its terminal ACK, or the acceptance's high-water), and each output
 * whose `streamCancel` went on this connection has ended. Until then the
 * server may not be reading this connection at all: an agent that stopped
 * taking input leaves the socket unread with the cancellations behind what
 * is in it (protocol 12).
 */
export function cancelsAnswered(attachment: Attachment, inputs: Iterable<InputFeeder>): boolean {
  for (const feeder of inputs) {
    if (feeder.streamToken !== undefined && !feeder.done) return false;
  }
  for (const stream of attachment.cancelsSent) {
    if (!stream.serverEnded) return false;
  }
  return true;
}

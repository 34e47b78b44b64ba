/**
 * The handle `client.invoke()` returns: promises for acceptance, the result
 * and the outcome; the output streams; cancellation; events. All protocol
 * work happens in `session.ts`; this file only shapes it for applications.
 */
import type { InvocationResultBody, SchemaGraphJson, SchemaValueJson } from "@golem-stream/wire";
import type { CancelOutcome } from "./cancel-delivery.js";
import { ClientError, SERVER_GENERIC_FAILURE } from "./errors.js";
import type { ResumeState } from "./checkpoint.js";
import type { InputStream } from "./input-stream.js";
import type { OutputStream } from "./output-stream.js";
import { EventListeners } from "./event-listeners.js";
import { Session, type SessionConfig, type SessionEvent, type SessionStart } from "./session.js";

/** The method's result. Output streams found in `value` are listed in document order. */
export type InvocationResult =
  | { readonly kind: "none" }
  | {
      readonly kind: "value";
      readonly graph: SchemaGraphJson;
      readonly value: SchemaValueJson;
      /** Every output stream the result exposes; `stream.coordinate` is its JSON pointer in `value`. */
      readonly streams: readonly OutputStream[];
      /** The value as plain JavaScript (schema-directed); its streams become `OutputStream`s. */
      js(): unknown;
    };

/** One acceptance of the invocation (the `accepted` event, and what `Invocation.accepted` resolves to). */
export interface AcceptedEvent {
  /** What was accepted: the start, or an attach (`resume`, `takeover`) after a reconnect or in a new process. */
  readonly operation: "start" | "resume" | "takeover";
  /** The attempt id (a UUIDv4) of the descriptor the server accepted. */
  readonly attemptId: string;
  /**
   * The descriptor had been sent before — by this handle, or, for a pending
   * operation continued from saved state, possibly by the process that saved
   * it — so this acceptance may be the server's replay of the committed one.
   */
  readonly replayed: boolean;
}
/** The `reconnecting` event: a connection ended and the next attempt waits `delayMs`. */
export interface ReconnectingEvent {
  /**
   * Connections ended since the invocation last made progress (reconnect
   * policy): the attempt about to be made is retry number `failures` of at most `maxAttempts`.
   */
  readonly failures: number;
  /** The policy's `maxAttempts`: when `failures` would exceed it, the invocation fails with `connection-lost`. */
  readonly maxAttempts: number;
  /** The wait before the attempt, ms (backoff with full jitter; `reconnectDelay`). */
  readonly delayMs: number;
  /** What ended the previous connection: a close, a rejection code, `revoked`. */
  readonly cause: string;
}

/** Each event of `Invocation.on`, with its payload. */
export interface InvocationEvents {
  /** Every acceptance: the first one and each after a reconnect. */
  accepted: AcceptedEvent;
  /** A connection ended and another attempt follows (within the reconnect policy). */
  reconnecting: ReconnectingEvent;
  /**
   * The server revoked this connection's attachment. Right after a replayed acceptance (protocol
   * 6.1) the runtime resumes; otherwise, or when that resume is refused `superseded`, another
   * process took over and the invocation fails with `revoked`.
   */
  revoked: Record<string, never>;
  /** An output stream became known (result, nested in an item, or re-announced after a takeover). */
  stream: OutputStream;
  /** An input source threw; the server was told `source-unavailable`. */
  inputFailed: { readonly input: InputStream; readonly error: unknown };
  /**
   * An invocation-wide cancel (`cancel()`, the caller's `signal`) reached the
   * server: every stream that had not ended was cancelled on an accepted
   * connection (or nothing ran there). The runtime has stopped.
   */
  cancelDelivered: Record<string, never>;
  /**
   * An invocation-wide cancel could not reach the server (`error`: e.g.
   * `connection-lost` once the reconnect policy is exhausted, `revoked`, or
   * `aborted` after `detach()`); its streams may still be open there. The
   * runtime has stopped; the saved state can still take the invocation over.
   */
  cancelUndelivered: { readonly error: ClientError };
  /**
   * An invocation-wide cancel could not reach the method: it had not returned its result within
   * `cancelConfirmTimeoutMs`, and it had no input open for the cancel to end — before its result
   * a method has no other stream a cancel could reach; or, `inputsEnded`, the server ended the
   * inputs it had open, but it neither returned nor failed within `cancelReturnTimeoutMs` after
   * (it may not read them). It keeps running until it returns (the streams of its result are
   * not cancelled) or until the server gives it up after its detached timeout. The runtime has
   * stopped.
   */
  cancelNotReached: { readonly inputsEnded: boolean };
  /**
   * An invocation-wide cancel found the invocation finished as a success, none of its output
   * streams cut: its method returned (before the cancel, or after it without being stopped by
   * the inputs it ended). Its outcome on the server is `success`. The runtime has stopped.
   */
  cancelInvocationSucceeded: Record<string, never>;
}

/** `onCheckpoint`: gets each state to save; the client waits for a returned promise before the next. */
export type CheckpointCallback = (state: ResumeState) => void | Promise<void>;

/**
 * One invocation, as `client.invoke`, `client.resume` and `client.takeover` return it: promises of
 * its acceptance, result and outcome, its output streams, `cancel()`, `detach()` and events.
 */
export class Invocation {
  /** Resolves when the server first accepts the invocation. */
  readonly accepted: Promise<AcceptedEvent>;
  /** Resolves with the method's result; rejects with a `ClientError` if the invocation fails first. */
  readonly result: Promise<InvocationResult>;
  /**
   * Resolves with the success outcome of `invocationFinished`; rejects with a `ClientError`
   * otherwise (kind `invocation-failed` carries the failure outcome's code and message).
   */
  readonly finished: Promise<{ readonly kind: "success" }>;
  /** Aborted (with the `ClientError` as reason) when the invocation fails or is cancelled. */
  readonly signal: AbortSignal;

  readonly #session: Session;
  readonly #controller = new AbortController();
  /** The first input source of this call that failed here (`inputFailed`): the likely cause of a failure that follows. */
  #inputFailure: unknown;
  readonly #listeners = new EventListeners<InvocationEvents>((event, error) => this.#listenerFailed(event, error));

  /** @internal Use `client.invoke`, `client.resume` or `client.takeover`. */
  constructor(config: SessionConfig, start: SessionStart, onCheckpoint: CheckpointCallback | undefined, signal: AbortSignal | undefined) {
    this.signal = this.#controller.signal;
    const accepted = deferred<AcceptedEvent>();
    const result = deferred<InvocationResult>();
    const finished = deferred<{ readonly kind: "success" }>();
    this.accepted = accepted.promise;
    this.result = result.promise;
    this.finished = finished.promise;
    const resolveAccepted = accepted.resolve;
    const resolveResult = result.resolve;
    const resolveFinished = (): void => finished.resolve({ kind: "success" });
    const rejectAll = (error: ClientError): void => {
      accepted.reject(error);
      result.reject(error);
      finished.reject(error);
    };

    this.#session = new Session(config, start, {
      onEvent: (event) => this.#dispatch(event, resolveAccepted),
      onResult: (body, streams, toJs) => resolveResult(shapeResult(body, streams, toJs)),
      onFinished: (outcome) => {
        // A success without a result, or before an output terminal, never gets here: the session
        // fails the invocation with the server's violation instead (decisions §8).
        if (outcome.kind === "success") return resolveFinished();
        // The server's message is public and generic; an input this process failed to feed (its
        // source threw, or an item did not fit its type) is the usual reason, and only known here.
        const failure = this.#inputFailure;
        // Without a reason from the server, after this process was away from it: a restart may be why.
        const away = failure === undefined && outcome.message === SERVER_GENERIC_FAILURE ? this.#session.awayNote : undefined;
        const error =
          failure === undefined
            ? new ClientError("invocation-failed", away !== undefined ? `${outcome.message} (${away})` : outcome.message, {
                code: outcome.code,
              })
            : new ClientError(
                "invocation-failed",
                `${outcome.message} (after an input of this call failed here: ${failure instanceof Error ? failure.message : String(failure)})`,
                {
                  code: outcome.code,
                  cause: failure,
                },
              );
        rejectAll(error);
        this.#controller.abort(error);
      },
      onFailed: (error) => {
        rejectAll(error);
        this.#controller.abort(error);
      },
      onCheckpoint,
    });
    if (signal !== undefined) {
      // The signal's reason (`controller.abort(reason)`) is the `aborted` error's cause, as for `client.agent`.
      const onAbort = (): void => void this.#session.abort("aborted by the caller's signal", signal.reason);
      if (signal.aborted) queueMicrotask(onAbort);
      else {
        signal.addEventListener("abort", onAbort, { once: true });
        // A signal often outlives many invocations: once this one is over, let go of it.
        const release = (): void => signal.removeEventListener("abort", onAbort);
        finished.promise.then(release, release);
      }
    }
    this.#session.run().catch((cause: unknown) => {
      // Only a defect in this package gets here; fail loudly rather than hang.
      const error = new ClientError("aborted", "the client runtime failed unexpectedly", { cause });
      rejectAll(error);
      this.#controller.abort(error);
      this.#session.crashed(error);
    });
  }

  /** The latest session token, once accepted. */
  get sessionToken(): string | undefined {
    return this.#session.sessionToken;
  }

  /** What `client.resume`/`client.takeover` need to continue this invocation elsewhere. */
  get state(): ResumeState | undefined {
    return this.#session.state;
  }

  /** Every output stream known so far. */
  get streams(): readonly OutputStream[] {
    return [...this.#session.outputs.values()];
  }

  /** The output stream a `{"kind":"stream","value":{"streamToken":…}}` node refers to (nested streams). */
  stream(reference: string | SchemaValueJson): OutputStream | undefined {
    const token =
      typeof reference === "string"
        ? reference
        : typeof reference.value === "object" && reference.value !== null && !Array.isArray(reference.value)
          ? reference.value["streamToken"]
          : undefined;
    return typeof token === "string" ? this.#session.outputs.get(token) : undefined;
  }

  /**
   * Cancels every open stream of the invocation (the server sees `cancelled`),
   * then detaches. The promises reject with a `ClientError` of kind `aborted`
   * at once, and so does the next `next()` of every output stream still being
   * read. The cancellations need an accepted connection: while there is none
   * (a reconnect wait, a start not yet accepted) the runtime goes on
   * reconnecting in the background, with the same policy, until they are
   * sent. The returned promise (never rejected) says whether they reached the
   * server — as do the `cancelDelivered` / `cancelUndelivered` events — or,
   * `not-reached` (`cancelNotReached`), that nothing could reach the method:
   * it had not returned its result within `cancelConfirmTimeoutMs` and had no
   * input open to cancel, or, `inputsEnded`, it had not returned within
   * `cancelReturnTimeoutMs` after the server ended its open inputs, so it may
   * keep running; or `invocation-succeeded` (`cancelInvocationSucceeded`), that
   * the invocation finished as a success without any output stream cut.
   * Calling it again returns the same promise.
   */
  cancel(reason = "cancelled by the caller"): Promise<CancelOutcome> {
    return this.#session.abort(reason);
  }

  /**
   * Stops this handle without cancelling anything: the invocation keeps
   * running on the server. Returns the state to continue with
   * `client.takeover(state)` — in this process or another one. After
   * `cancel()`, stops a delivery still under way (`cancelUndelivered`).
   */
  detach(): ResumeState | undefined {
    return this.#session.detach();
  }

  /**
   * Calls `listener` on each `event` (see `InvocationEvents`); returns a function that removes it.
   * A listener that throws fails the call with `invalid-argument` while its outcome is open, and is
   * rethrown asynchronously otherwise (docs/protocol/client.md §3a).
   */
  on<E extends keyof InvocationEvents>(event: E, listener: (payload: InvocationEvents[E]) => void): () => void {
    return this.#listeners.add(event, listener);
  }

  #emit<E extends keyof InvocationEvents>(event: E, payload: InvocationEvents[E]): void {
    this.#listeners.emit(event, payload);
  }

  /**
   * A listener threw: the application's bug, reported as such. While the call's outcome is open it
   * fails the call, as a `getToken` that throws does; once the outcome is decided (an event of a
   * cancel's delivery, say) nothing is left to fail, and it is rethrown in a microtask of its own,
   * where the platform reports any uncaught exception.
   */
  #listenerFailed(event: keyof InvocationEvents, thrown: unknown): void {
    const why = thrown instanceof Error ? thrown.message : String(thrown);
    const error = new ClientError("invalid-argument", `a listener of the ${event} event threw: ${why}`, { cause: thrown });
    if (!this.#session.failedByApplication(error)) {
      queueMicrotask(() => {
        throw thrown;
      });
    }
  }

  #dispatch(event: SessionEvent, resolveAccepted: (event: AcceptedEvent) => void): void {
    switch (event.type) {
      case "accepted": {
        const payload = { operation: event.operation, attemptId: event.attemptId, replayed: event.replayed };
        resolveAccepted(payload);
        this.#emit("accepted", payload);
        return;
      }
      case "reconnecting":
        this.#emit("reconnecting", {
          failures: event.failures,
          maxAttempts: event.maxAttempts,
          delayMs: event.delayMs,
          cause: event.cause,
        });
        return;
      case "revoked":
        this.#emit("revoked", {});
        return;
      case "stream":
        this.#emit("stream", event.stream);
        return;
      case "input-failed":
        if (this.#inputFailure === undefined) this.#inputFailure = event.error;
        this.#emit("inputFailed", { input: event.input, error: event.error });
        return;
      case "cancel-delivered":
        this.#emit("cancelDelivered", {});
        return;
      case "cancel-undelivered":
        this.#emit("cancelUndelivered", { error: event.error });
        return;
      case "cancel-not-reached":
        this.#emit("cancelNotReached", { inputsEnded: event.inputsEnded });
        return;
      case "cancel-invocation-succeeded":
        this.#emit("cancelInvocationSucceeded", {});
        return;
    }
  }
}

function shapeResult(result: InvocationResultBody, streams: OutputStream[], toJs: () => unknown): InvocationResult {
  if (result.kind === "none") return { kind: "none" };
  return { kind: "value", graph: result.graph, value: result.value, streams, js: toJs };
}

interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

/** A promise settled from outside; an unobserved rejection never crashes the process. */
function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

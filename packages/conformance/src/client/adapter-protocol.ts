/**
 * The client adapter protocol: how the client suite drives a client under
 * test, whatever its language. The adapter is a child process; the suite
 * writes one command per line (JSON) to its stdin and reads one event per
 * line (JSON) from its stdout. Its stderr is kept for diagnostics only.
 * The JSON Schema is `schemas/client-adapter.schema.json`; the README's
 * "Writing an adapter" section is the prose contract.
 */
import type { SchemaValueJson } from "@golem-stream/wire";

/** The element kinds an input leaf can name: how the adapter binds the stream in its language. */
export type InputElement = "value" | "u8";

/** Starts one invocation. Sent once per adapter process. */
export interface StartCommand {
  readonly type: "start";
  /** Base URL of the server (`ws://127.0.0.1:PORT`); the client appends `/v1/agents/invoke-agent-session`. */
  readonly url: string;
  /** Bearer token for every connection. */
  readonly token: string;
  readonly application: string;
  readonly environment: string;
  readonly agentType: string;
  readonly constructorParameters: SchemaValueJson;
  readonly method: string;
  /**
   * The method's parameters as a native SchemaValue, in which each input
   * stream leaf is `{"kind":"stream","value":{"input":NAME,"element":"value"|"u8"}}`:
   * the adapter binds a stream of its language there, fed by `feed` commands.
   */
  readonly methodParameters: unknown;
  readonly idempotencyKey: string;
  /** How long to wait for the answer to a start or resume before an exact retry (ms). */
  readonly acceptanceTimeoutMs: number;
  /** Reconnect attempts without progress before giving up. */
  readonly maxReconnectAttempts: number;
  /** Ceiling of the delay between reconnect attempts (ms); the suite keeps it small. */
  readonly maxReconnectDelayMs: number;
  /**
   * Report every state the client persists (protocol §13) as a `checkpoint`
   * event, in the order the client saves them. A client that cannot persist
   * its state answers with `commandError` (the restart and takeover scenarios then fail).
   */
  readonly checkpoints?: boolean;
}

/**
 * Continues an invocation from a state an earlier adapter process reported
 * in a `checkpoint` event, as a fresh process would after a restart
 * (`resume`) or to claim the session from another owner (`takeover`).
 * Sent instead of `start`, once per adapter process.
 */
export interface AttachCommand {
  readonly type: "attach";
  readonly url: string;
  readonly token: string;
  readonly operation: "resume" | "takeover";
  /** The `state` of a `checkpoint` event, exactly as reported: opaque to the suite. */
  readonly state: unknown;
  readonly acceptanceTimeoutMs: number;
  readonly maxReconnectAttempts: number;
  readonly maxReconnectDelayMs: number;
  readonly checkpoints?: boolean;
}

/** Items for an input stream: SchemaValues (`element` "value") or bytes as hex (`element` "u8"). */
export type FeedCommand = { readonly type: "feed"; readonly input: string } & (
  { readonly items: readonly SchemaValueJson[] } | { readonly bytesHex: string }
);

export interface EndInputCommand {
  readonly type: "endInput";
  readonly input: string;
}

/**
 * Delivers up to `count` more items of output stream `stream` (the index in
 * the result's document order) to the application, one `item` event each;
 * without `count`, every item until the end. Then a `readDone` event. The
 * adapter must not take items from the client beyond what was asked.
 */
export interface ReadCommand {
  readonly type: "read";
  readonly stream: number;
  readonly count?: number;
  /**
   * Report the bytes of packed u8 batches and binary items by `size` and
   * `sha256` instead of `bytesHex` (scenarios that move megabytes).
   */
  readonly digest?: boolean;
}

/** Cancels the invocation (every open stream). */
export interface CancelCommand {
  readonly type: "cancel";
  readonly reason?: "cancelled" | "consumer-drop" | "source-unavailable";
}

/** Stops: the adapter releases the client and exits with status 0. */
export interface CloseCommand {
  readonly type: "close";
}

export type AdapterCommand = StartCommand | AttachCommand | FeedCommand | EndInputCommand | ReadCommand | CancelCommand | CloseCommand;

export type StreamEndOutcome =
  | { readonly kind: "ok" }
  | { readonly kind: "error"; readonly code: string; readonly message?: string }
  | { readonly kind: "cancelled"; readonly reason: string };

/** Categories of a failed invocation, language-neutral. */
export const ERROR_CATEGORIES = [
  "rejected",
  "revoked",
  "connection-lost",
  "invocation-failed",
  "server-violation",
  "aborted",
  "other",
] as const;
export type ErrorCategory = (typeof ERROR_CATEGORIES)[number];

export type AdapterEvent =
  /** First line, before any command is read. */
  | { readonly type: "ready"; readonly implementation: string }
  /** Every acceptance: the first one and each after a reconnect. */
  | {
      readonly type: "accepted";
      readonly operation: "start" | "resume" | "takeover";
      readonly attemptId: string;
      readonly replayed?: boolean;
    }
  /** A connection ended and the client will try again. */
  | { readonly type: "reconnecting"; readonly cause?: string }
  /** The server revoked a connection (attachmentRevoked). */
  | { readonly type: "revoked" }
  /** The invocation's result; `streams` counts its output streams (indexes 0 … streams-1, in document order). */
  | { readonly type: "result"; readonly kind: "none" | "value"; readonly streams: number }
  /** A nested output stream became known (an item exposing it arrived): its index (the next free one) and its token. */
  | { readonly type: "stream"; readonly stream: number; readonly streamToken: string }
  /**
   * One output item handed to the application: a SchemaValue, or the bytes of
   * a packed u8 batch or binary item (as hex, or by size and SHA-256 after a `read` with `digest`).
   */
  | {
      readonly type: "item";
      readonly stream: number;
      readonly value?: SchemaValueJson;
      readonly bytesHex?: string;
      readonly size?: number;
      readonly sha256?: string;
    }
  /** A state the client persisted (after `start` or `attach` with `checkpoints`): opaque JSON, given back in `attach`. */
  | { readonly type: "checkpoint"; readonly state: unknown }
  | { readonly type: "readDone"; readonly stream: number; readonly delivered: number }
  | { readonly type: "streamEnd"; readonly stream: number; readonly outcome: StreamEndOutcome }
  /** The invocation finished successfully (invocationFinished success). */
  | { readonly type: "finished" }
  /** The invocation failed: `code` is the public protocol code when there is one (the server's, or the violation's). */
  | { readonly type: "error"; readonly category: ErrorCategory; readonly code?: string; readonly message: string }
  /** The answer to `cancel`: whether the cancellation reached the server. */
  | { readonly type: "cancelled"; readonly delivered: boolean }
  /** A command the adapter could not carry out (a bug in the suite or the adapter). */
  | { readonly type: "commandError"; readonly message: string };

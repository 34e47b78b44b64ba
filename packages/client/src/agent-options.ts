/**
 * The options of a client's calls and the untyped agent handle: what
 * `client.ts` takes and `contract-agent.ts` builds on, in a file of their
 * own so neither of those two imports the other for them.
 */
import type { ConfigEntry, SchemaValueJson } from "@golem-stream/wire";
import type { AgentTypeSchema } from "./discovery.js";
import type { ParamNode } from "./input-stream.js";
import type { CheckpointCallback, Invocation } from "./invocation.js";

/** What `client.invoke` calls, in the protocol's native terms (the selector of protocol 4.1). */
export interface InvokeOptions {
  /** The application that deploys the agent type. */
  readonly application: string;
  /** The application's environment (`default`, `prod`, …). */
  readonly environment: string;
  /** The agent type's name, as in the server's catalogue. */
  readonly agentType: string;
  /** Native SchemaValue (the record of the constructor's parameters); must not contain streams. */
  readonly constructorParameters: SchemaValueJson;
  /** The method to call. */
  readonly method: string;
  /** Native SchemaValue whose stream leaves are `inputStream.*(source)` bindings. */
  readonly methodParameters: ParamNode;
  /** Agent configuration entries (protocol 4.2; values are plain JSON, not SchemaValues). Default: none. */
  readonly config?: readonly ConfigEntry[];
  /**
   * Makes the start happen once (1 byte to 1 KiB of UTF-8): a second start with the same key is
   * refused `idempotency-conflict`, so continue a call with `client.takeover`. Default: a fresh UUID.
   */
  readonly idempotencyKey?: string;
  /**
   * Picks one phantom instance among the agents of the same constructor parameters: a lower-case
   * hyphenated UUID (any version). Absent, the agent is the one its constructor parameters name.
   */
  readonly phantomId?: string;
  /** Aborting it is `call.cancel()`: every stream is cancelled and the handle detaches. Let go once the call is over. */
  readonly signal?: AbortSignal;
  /**
   * Called, one call at a time, with the full current state before a start, resume or takeover is
   * first sent, on each acceptance and after every delivery (the CLI's checkpoint): save it to
   * continue with `client.takeover` after a crash. A callback that throws or rejects stops
   * delivery, and the call fails with `checkpoint-failed`. Default: none (nothing is computed).
   */
  readonly onCheckpoint?: CheckpointCallback;
}

/** Options of `client.resume` and `client.takeover`. */
export interface AttachOptions {
  /** As `InvokeOptions.signal`: aborting it is `call.cancel()`. */
  readonly signal?: AbortSignal;
  /** As `InvokeOptions.onCheckpoint`: the continued call's state, to save. */
  readonly onCheckpoint?: CheckpointCallback;
}

/** What `client.agent` looks up in the server's catalogue. */
export interface AgentOptions {
  /** The application that deploys the agent type. */
  readonly application: string;
  /** The application's environment (`default`, `prod`, …). */
  readonly environment: string;
  /** The agent type's name; one the catalogue lacks is `rejected` / `not-found`. */
  readonly agentType: string;
  /** Constructor parameters as plain JavaScript, converted with the catalogue's schema (`invalid-argument` if they do not fit). */
  readonly constructorArgs: unknown;
  /**
   * Picks one phantom instance among the agents of the same constructor parameters: a lower-case
   * hyphenated UUID (any version). Absent, the agent is the one its constructor parameters name.
   */
  readonly phantomId?: string;
  /**
   * Aborts this `client.agent` call while it reads the catalogue (the request, the download): it
   * rejects with a `ClientError` of kind `aborted` whose `cause` is the signal's reason, and the
   * download stops. An abort while `getToken` runs takes effect when the request is made. Once the
   * agent is returned, aborting it does nothing: it cancels none of `agent.invoke`'s calls;
   * give each call its own (`AgentInvokeOptions.signal`). Anything but an `AbortSignal` is
   * refused with `invalid-argument` before the request.
   */
  readonly signal?: AbortSignal;
  /**
   * Called with the served agent type before anything else (before the constructor arguments are
   * converted); throwing refuses it. `typedAgent` checks its contract here.
   */
  readonly checkSchema?: (schema: AgentTypeSchema) => void;
}

/** Per-call options of `agent.invoke`. */
export type AgentInvokeOptions = Pick<InvokeOptions, "config" | "idempotencyKey" | "signal" | "onCheckpoint">;

/** One agent, typed by the server's catalogue: invoke its methods with plain JavaScript. */
export interface Agent {
  /** The agent type as the server's catalogue describes it. */
  readonly schema: AgentTypeSchema;
  /**
   * `args` is the method's parameter record as a JavaScript object; every stream parameter is a
   * source (async iterable, iterable, `ReadableStream`, Node `Readable`) or an `InputStream`.
   */
  invoke(method: string, args: unknown, options?: AgentInvokeOptions): Invocation;
}

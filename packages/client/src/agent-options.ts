/**
 * The options of a client's calls and the untyped agent handle: what
 * `client.ts` takes and `contract-agent.ts` builds on, in a file of their
 * own so neither of those two imports the other for them.
 */
import type { ConfigEntry, SchemaValueJson } from "@golem-stream/wire";
import type { AgentTypeSchema } from "./discovery.js";
import type { ParamNode } from "./input-stream.js";
import type { CheckpointCallback, Invocation } from "./invocation.js";

export interface InvokeOptions {
  readonly application: string;
  readonly environment: string;
  readonly agentType: string;
  /** Native SchemaValue; must not contain streams. */
  readonly constructorParameters: SchemaValueJson;
  readonly method: string;
  /** Native SchemaValue whose stream leaves are `inputStream.*(source)` bindings. */
  readonly methodParameters: ParamNode;
  readonly config?: readonly ConfigEntry[];
  /** Makes retries of the whole call safe; default: a fresh UUID. */
  readonly idempotencyKey?: string;
  readonly phantomId?: string;
  /** Aborting cancels every stream and detaches (see `Invocation.cancel`). */
  readonly signal?: AbortSignal;
  /** Called after every delivery with the full current state (the CLI's checkpoint). */
  readonly onCheckpoint?: CheckpointCallback;
}

export interface AttachOptions {
  readonly signal?: AbortSignal;
  readonly onCheckpoint?: CheckpointCallback;
}

export interface AgentOptions {
  readonly application: string;
  readonly environment: string;
  readonly agentType: string;
  /** Constructor parameters as plain JavaScript, converted with the catalogue's schema. */
  readonly constructorArgs: unknown;
  readonly phantomId?: string;
  /**
   * Aborts this `client.agent` call while it reads the catalogue (the request, the download): it
   * rejects with a `ClientError` of kind `aborted` whose `cause` is the signal's reason, and the
   * download stops. An abort while `getToken` runs takes effect when the request is made. Once the
   * agent is returned, aborting it does nothing: it cancels none of `agent.invoke`'s calls;
   * give each call its own (`AgentInvokeOptions.signal`).
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
  readonly schema: AgentTypeSchema;
  /**
   * `args` is the method's parameter record as a JavaScript object; every stream parameter is a
   * source (async iterable, iterable, `ReadableStream`, Node `Readable`) or an `InputStream`.
   */
  invoke(method: string, args: unknown, options?: AgentInvokeOptions): Invocation;
}

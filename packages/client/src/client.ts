/**
 * `createClient()`: where an application starts. A client holds the endpoint,
 * credentials, transport and limits; each `invoke`/`resume`/`takeover` makes
 * one invocation handle with its own WebSocket session.
 */
import {
  LIMITS,
  SESSION_PATH,
  canonicalJson,
  encodeClientMessage,
  isBearerToken,
  utf8ByteLength,
  type InvocationStart,
  type JsonValue,
  type ResumeAttach,
  type Selector,
} from "@golem-stream/wire";
import type { ResumeState } from "./checkpoint.js";
import { ClientError } from "./errors.js";
import type { Agent, AgentOptions, AttachOptions, InvokeOptions } from "./agent-options.js";
import { Invocation } from "./invocation.js";
import { resolvePolicy, type ReconnectPolicy } from "./reconnect-policy.js";
import { integerOption, nonNegativeMs, optionsObject, positiveInteger, positiveMs, signalOption } from "./option-checks.js";
import type { Transport } from "./transport.js";
import {
  DEFAULT_MAX_CATALOGUE_BYTES,
  MAX_CATALOGUE_BYTES_OPTION,
  agentTypeNotFound,
  methodNotFound,
  discoveryUrl,
  fetchCatalogue,
  type AgentTypeSchema,
} from "./discovery.js";
import { jsToConstructor, methodParams } from "./typed-agent.js";
import { randomUUID } from "./uuid.js";
import { firstStreamIn } from "./values.js";
import type { AnyAgentContract } from "@golem-stream/contract";
import { contractOptions, typedAgent, type ContractConnectOptions, type TypedAgent } from "./contract-agent.js";

export type { Agent, AgentInvokeOptions, AgentOptions, AttachOptions, InvokeOptions } from "./agent-options.js";

/** What `createClient` takes: the endpoint and credentials (required), the transport and limits (each with its default). */
export interface ClientOptions {
  /** Server base URL (`http://`, `https://`, `ws://` or `wss://`); the session path is appended when absent. */
  readonly url: string;
  /** A fixed bearer token, visible ASCII (give exactly one of `token` and `getToken`; `invalid-argument` otherwise)… */
  readonly token?: string;
  /**
   * …or a function asked before every connection and catalogue request, so tokens can rotate during
   * reconnects, keeping the caller (another principal's token resumes nothing: `invalid-token`). One
   * that throws or rejects, or gives anything but a token as `token` must be, fails the call, `agent`
   * or `connect` with `invalid-argument` ("getToken failed"), what it threw (or why) as the `cause`.
   */
  readonly getToken?: () => string | Promise<string>;
  /**
   * Default: under Node (the package's `node` export condition) `wsTransport()`, over `ws`;
   * elsewhere (browsers, bundles for them) `webSocketTransport()` over the global `WebSocket`.
   */
  readonly transport?: Transport;
  /** Backoff, jitter and the budget of attempts without progress; see `ReconnectPolicy` for the defaults. */
  readonly reconnect?: ReconnectPolicy;
  /**
   * How long the server may leave the first message of a connection (the start, resume or
   * takeover) unanswered before the connection is dropped and the identical descriptor is retried
   * with the same attempt id (an uncertain outcome, protocol 9). The retry counts against
   * `reconnect.maxAttempts`. Default 30 000 ms; 0 waits forever.
   */
  readonly acceptanceTimeoutMs?: number;
  /**
   * After an invocation-wide cancel (`cancel()`) is sent, the connection is closed and the
   * server's close frame confirms that the server read the cancellations (frames arrive in
   * order); only then does the cancel count as `delivered`. This bounds the wait for that frame,
   * and, while the cancel still waits for the result, the wait for the server's answers to the
   * cancellations (terminal ACKs, stream ends). Past it, or when the connection drops, the server
   * may not be reading this connection (an agent that stopped taking input leaves its socket
   * unread), so the cancellations go again, first thing, on a new connection (a `resume`,
   * within the reconnect policy); the cancel is `undelivered` only when that policy is spent.
   * It also bounds the wait for the result of a method the cancel could not reach (it had no
   * input open to cancel): one that has not returned by then makes the cancel `not-reached`.
   * Default 10 000 ms.
   */
  readonly cancelConfirmTimeoutMs?: number;
  /**
   * How long an invocation-wide cancel that ended inputs the method had open waits, once the
   * server has answered the cancellations, for the method to return or fail. Ending an input is
   * all v1 can do to a method before its result, and a method that does not read it never sees
   * it: past this bound the cancel is `not-reached` with `inputsEnded`, and the method may keep
   * running until it returns or the server gives it up (docs/protocol/client.md §10a).
   * Default 10 000 ms.
   */
  readonly cancelReturnTimeoutMs?: number;
  /** Unacknowledged input kept per stream for resends; the source pauses when it is full. Default 8 MiB (decisions §6). */
  readonly maxUnackedInputBytes?: number;
  /** Output items queued per stream before the session is paused. Default 256 (decisions §6). */
  readonly maxQueuedEntriesPerStream?: number;
  /** Output bytes queued per session before it is paused. Default 64 MiB (decisions §6). */
  readonly maxQueuedBytes?: number;
  /**
   * The largest agent catalogue (`GET /v1/agents/types`, the JSON text of one application and
   * environment) that `agent` and `connect` read; a larger one fails with `server-violation` /
   * `limit-exceeded` naming this option, before more than this is downloaded. Default 8 MiB
   * (about 35 000 agent types of one small method each); at most 256 MiB.
   */
  readonly maxCatalogueBytes?: number;
}

/** Made by `createClient`: calls agent methods, each call over WebSocket sessions of its own. */
export interface Client {
  /**
   * Starts one invocation and returns its handle at once: nothing is awaited here, the start is
   * sent (and retried per the reconnect policy) in the background. Its outcome comes through the
   * handle: `accepted`, `result`, `finished`, which reject with a `ClientError`, and its events.
   * Throws `invalid-argument`, before any I/O, for an unusable option (a stream in
   * `constructorParameters`, an idempotency key outside 1 byte .. 1 KiB, a `signal` that is no
   * `AbortSignal`, a hand-written stream node).
   */
  invoke(options: InvokeOptions): Invocation;
  /**
   * Reads the catalogue (`GET /v1/agents/types`) and returns a typed handle for one agent. Rejects
   * with `invalid-argument`, before any request, for options that are no object or a `signal` that
   * is no `AbortSignal`.
   */
  agent(options: AgentOptions): Promise<Agent>;
  /**
   * An agent typed by a contract of `@golem-stream/contract` (`typedAgent(client, contract,
   * options)` is an alias of this call): its schema is checked against
   * the server's catalogue first (`contract-mismatch`), its methods take and
   * return plain JavaScript, output streams as typed async iterables.
   */
  connect<C extends AnyAgentContract>(contract: C, options: ContractConnectOptions<C>): Promise<TypedAgent<C>>;
  /**
   * Continues with the session token of the current generation (the same owner reconnecting).
   * Throws `invalid-argument`, before any I/O, for a state that is unusable or contradicts itself,
   * options that are no object, a `signal` that is no `AbortSignal` or an `onCheckpoint` that is
   * no function; so does `takeover`.
   */
  resume(state: ResumeState, options?: AttachOptions): Invocation;
  /** Claims the session from any generation — another process, a restarted CLI. */
  takeover(state: ResumeState, options?: AttachOptions): Invocation;
}

/**
 * `createClient` of both builds; `defaultTransport` makes the transport used
 * when the options name none (the entries differ only there: index.ts, browser.ts).
 */
export function createClientWith(options: ClientOptions, defaultTransport: () => Transport): Client {
  if (typeof options !== "object" || options === null) throw new ClientError("invalid-argument", "createClient needs an options object");
  const { token, getToken } = options;
  if ((token === undefined) === (getToken === undefined)) {
    throw new ClientError("invalid-argument", "give exactly one of token or getToken");
  }
  if (token !== undefined) {
    const wrong = tokenProblem(token);
    if (wrong !== undefined) throw new ClientError("invalid-argument", `token must be ${wrong}`);
  }
  if (getToken !== undefined && typeof getToken !== "function") throw new ClientError("invalid-argument", "getToken must be a function");
  if (options.transport !== undefined && typeof options.transport?.connect !== "function") {
    throw new ClientError("invalid-argument", "transport must have a connect() method");
  }
  if (options.transport?.fetch !== undefined && typeof options.transport.fetch !== "function") {
    throw new ClientError("invalid-argument", "transport.fetch must be a function when given");
  }
  const config = {
    url: sessionUrl(options.url),
    getToken: getToken === undefined ? () => token as string : checkedTokens(getToken),
    transport: options.transport ?? defaultTransport(),
    policy: resolvePolicy(options.reconnect),
    maxUnackedInputBytes: positiveInteger(options.maxUnackedInputBytes, LIMITS.defaultClientUnackedInputBytes, "maxUnackedInputBytes"),
    maxQueuedEntriesPerStream: positiveInteger(
      options.maxQueuedEntriesPerStream,
      LIMITS.maxQueuedEntriesPerStream,
      "maxQueuedEntriesPerStream",
    ),
    maxQueuedBytes: positiveInteger(options.maxQueuedBytes, LIMITS.maxQueuedBytesPerSession, "maxQueuedBytes"),
    maxCatalogueBytes: integerOption(
      options.maxCatalogueBytes,
      DEFAULT_MAX_CATALOGUE_BYTES,
      "maxCatalogueBytes",
      1,
      MAX_CATALOGUE_BYTES_OPTION,
    ),
    acceptanceTimeoutMs: nonNegativeMs(options.acceptanceTimeoutMs, DEFAULT_ACCEPTANCE_TIMEOUT_MS, "acceptanceTimeoutMs"),
    // A timer: beyond 2^31 - 1 ms Node would fire it at once.
    cancelConfirmTimeoutMs: positiveMs(options.cancelConfirmTimeoutMs, DEFAULT_CANCEL_CONFIRM_TIMEOUT_MS, "cancelConfirmTimeoutMs"),
    cancelReturnTimeoutMs: positiveMs(options.cancelReturnTimeoutMs, DEFAULT_CANCEL_RETURN_TIMEOUT_MS, "cancelReturnTimeoutMs"),
  };
  const servedType = async (
    application: string,
    environment: string,
    agentType: string,
    signal: AbortSignal | undefined,
  ): Promise<AgentTypeSchema> => {
    const url = discoveryUrl(config.url, application, environment);
    let token: string;
    try {
      token = await config.getToken();
    } catch (cause) {
      // As a connection's getToken failure (attachment.ts): the application's function, not the server, failed.
      throw new ClientError("invalid-argument", "getToken failed", { cause });
    }
    const { transport } = config;
    const request = transport.fetch === undefined ? undefined : transport.fetch.bind(transport);
    const catalogue = await fetchCatalogue(url, token, config.maxCatalogueBytes, signal, request);
    const schema = catalogue.get(agentType);
    if (schema === undefined) throw agentTypeNotFound(url, agentType, [...catalogue.keys()]);
    return schema;
  };
  const agentOf = (schema: AgentTypeSchema, options: AgentOptions): Agent => {
    const { application, environment, agentType } = options;
    const constructorParameters = jsToConstructor(options.constructorArgs, schema);
    return {
      schema,
      invoke(method, args, extra = {}) {
        const methodSchema = schema.methods.get(method);
        if (methodSchema === undefined) throw methodNotFound(agentType, method, [...schema.methods.keys()]);
        return client.invoke({
          ...extra,
          application,
          environment,
          agentType,
          constructorParameters,
          method,
          methodParameters: methodParams(method, args, methodSchema.parameters),
          ...(options.phantomId === undefined ? {} : { phantomId: options.phantomId }),
        });
      },
    };
  };
  const client: Client = {
    connect(contract, connectOptions) {
      return typedAgent(client, contract, contractOptions(connectOptions));
    },
    async agent(options) {
      if (typeof options !== "object" || options === null) throw new ClientError("invalid-argument", "agent needs an options object");
      // As a start's selector requires them (wire): refused here, not as a catalogue that lacks the type.
      for (const name of ["application", "environment", "agentType"] as const) {
        const value: unknown = options[name];
        if (typeof value !== "string" || value.length === 0)
          throw new ClientError("invalid-argument", `${name} must be a non-empty string`);
      }
      const schema = await servedType(options.application, options.environment, options.agentType, signalOption(options.signal));
      if (options.checkSchema !== undefined) {
        if (typeof options.checkSchema !== "function") throw new ClientError("invalid-argument", "checkSchema must be a function");
        options.checkSchema(schema);
      }
      return agentOf(schema, options);
    },
    invoke(invoke) {
      if (typeof invoke !== "object" || invoke === null) throw new ClientError("invalid-argument", "invoke needs an options object");
      signalOption(invoke.signal);
      if (invoke.onCheckpoint !== undefined && typeof invoke.onCheckpoint !== "function") {
        throw new ClientError("invalid-argument", "onCheckpoint must be a function");
      }
      const idempotencyKey = invoke.idempotencyKey === undefined ? randomUUID() : invoke.idempotencyKey;
      if (typeof idempotencyKey !== "string") throw new ClientError("invalid-argument", "idempotencyKey must be a string");
      const keyBytes = utf8ByteLength(idempotencyKey);
      if (keyBytes === 0 || keyBytes > LIMITS.maxIdempotencyKeyBytes) {
        throw new ClientError("invalid-argument", "idempotencyKey must be 1 byte .. 1 KiB of UTF-8", { code: "validation-error" });
      }
      const streamAt = firstStreamIn(invoke.constructorParameters);
      if (streamAt !== undefined) {
        throw new ClientError("invalid-argument", `constructor parameters must not contain a stream (one is at "${streamAt}")`, {
          code: "validation-error",
        });
      }
      const selector: Selector = {
        agentType: invoke.agentType,
        application: invoke.application,
        constructorParameters: invoke.constructorParameters,
        environment: invoke.environment,
        method: invoke.method,
        ...(invoke.phantomId === undefined ? {} : { phantomId: invoke.phantomId }),
      };
      const template = { type: "invocationStart" as const, config: invoke.config ?? [], idempotencyKey, selector };
      return new Invocation(config, { kind: "start", template, params: invoke.methodParameters }, invoke.onCheckpoint, invoke.signal);
    },
    resume: (state, attach) => attachTo("resume", state, attach),
    takeover: (state, attach) => attachTo("takeover", state, attach),
  };
  /** resume and takeover: their options checked as invoke's, before any I/O. */
  const attachTo = (operation: "resume" | "takeover", state: ResumeState, attach: AttachOptions | undefined): Invocation => {
    checkResumeState(state);
    const { onCheckpoint, signal } = optionsObject(attach, operation);
    if (onCheckpoint !== undefined && typeof onCheckpoint !== "function")
      throw new ClientError("invalid-argument", "onCheckpoint must be a function");
    return new Invocation(config, { kind: "attach", operation, state }, onCheckpoint, signalOption(signal));
  };
  return client;
}

/** `http://h:p` → `ws://h:p/v1/agents/invoke-agent-session`; an explicit path is kept. */
export function sessionUrl(base: string): string {
  if (typeof base !== "string") throw new ClientError("invalid-argument", "url must be a string");
  let url: URL;
  try {
    url = new URL(base);
  } catch (cause) {
    throw new ClientError("invalid-argument", `not a URL: ${base}`, { cause });
  }
  if (url.protocol === "http:") url.protocol = "ws:";
  else if (url.protocol === "https:") url.protocol = "wss:";
  else if (url.protocol !== "ws:" && url.protocol !== "wss:")
    throw new ClientError("invalid-argument", `unsupported URL scheme ${url.protocol}`);
  if (url.pathname === "/" || url.pathname === "") url.pathname = SESSION_PATH;
  return url.toString();
}

/** Default of `ClientOptions.acceptanceTimeoutMs`. */
export const DEFAULT_ACCEPTANCE_TIMEOUT_MS = 30_000;

/** Default of `ClientOptions.cancelConfirmTimeoutMs`. */
export const DEFAULT_CANCEL_CONFIRM_TIMEOUT_MS = 10_000;

/** Default of `ClientOptions.cancelReturnTimeoutMs`. */
export const DEFAULT_CANCEL_RETURN_TIMEOUT_MS = 10_000;

/**
 * Saved state often comes from a file: check it before use, with the wire
 * encoder's rules for the parts that go on the wire.
 */
function checkResumeState(state: ResumeState): void {
  const bad = (what: string): ClientError => new ClientError("invalid-argument", `resume state: ${what}`);
  if (typeof state !== "object" || state === null) throw bad("must be an object");
  const cursors: unknown = state.outputCursors;
  if (!Array.isArray(cursors) || !cursors.every((cursor) => typeof cursor === "string"))
    throw bad("outputCursors must be an array of strings");
  if (typeof state.idempotencyKey !== "string") throw bad("idempotencyKey must be a string");
  if (typeof state.selector !== "object" || state.selector === null) throw bad("selector must be an object");
  const pending: unknown = state.pendingOperation;
  let probe: InvocationStart | ResumeAttach;
  if (state.sessionToken === undefined) {
    // Saved before acceptance: the frozen start is all there is.
    if (!isMessageOfType(pending, "invocationStart"))
      throw bad("without a sessionToken, pendingOperation must be the frozen invocationStart");
    if (cursors.length !== 0) throw bad("a pending start has no output cursors");
    probe = pending;
  } else {
    if (pending !== undefined && !isMessageOfType(pending, "resumeAttach")) throw bad("pendingOperation must be a resumeAttach");
    probe = pending ?? {
      type: "resumeAttach",
      attemptId: "00000000-0000-4000-8000-000000000000",
      operation: "takeover",
      outputCursors: cursors as string[],
      sessionToken: state.sessionToken,
    };
  }
  try {
    encodeClientMessage(probe);
  } catch (cause) {
    throw new ClientError("invalid-argument", `resume state: ${cause instanceof Error ? cause.message : "not encodable"}`, { cause });
  }
  if (probe.type === "invocationStart") {
    // The state's own selector and key must be the start's, or the state contradicts itself.
    if (probe.idempotencyKey !== state.idempotencyKey) throw bad("idempotencyKey differs from the pending start's");
    if (!sameJson(probe.selector, state.selector)) throw bad("selector differs from the pending start's");
  }
}

/** Semantic equality of two JSON documents (canonical form); anything that is not JSON differs. */
function sameJson(a: unknown, b: unknown): boolean {
  try {
    return canonicalJson(a as JsonValue) === canonicalJson(b as JsonValue);
  } catch {
    return false;
  }
}

function isMessageOfType<T extends "invocationStart" | "resumeAttach">(
  value: unknown,
  type: T,
): value is T extends "invocationStart" ? InvocationStart : ResumeAttach {
  return typeof value === "object" && value !== null && (value as { type?: unknown }).type === type;
}

/**
 * `getToken` as connections and discovery call it: what it gives is checked as `token` is, so a
 * function that resolves to nothing (a forgotten `return`) fails as `getToken failed` with this as
 * the cause, instead of reaching the server as the bearer token "undefined".
 */
function checkedTokens(getToken: () => string | Promise<string>): () => Promise<string> {
  return async () => {
    const token: unknown = await getToken();
    const wrong = tokenProblem(token);
    if (wrong === undefined) return token as string;
    throw new ClientError("invalid-argument", `getToken must give ${wrong}`);
  };
}

/** What is wrong with `token` as a bearer token, said to follow "must be": undefined when nothing is. */
function tokenProblem(token: unknown): string | undefined {
  if (typeof token !== "string" || token.length === 0) {
    const given = typeof token === "string" ? "an empty string" : token === null ? "null" : typeof token;
    return `a non-empty string, not ${given}`;
  }
  if (isBearerToken(token)) return undefined;
  // Most often a token read from a file with its line's end, or pasted with a space.
  return /^\s|\s$/.test(token)
    ? "visible ASCII with no space or line end around it: trim it (a token read from a file keeps its newline)"
    : "visible ASCII only (no spaces, line ends or other characters outside ! to ~)";
}

/**
 * `client.connect(contract, {...})` and its alias `typedAgent(client, contract, {...})`: an
 * agent whose methods are typed by a contract (`@golem-stream/contract`). The contract is checked against the
 * server's catalogue first, so a client built for another schema fails with
 * `contract-mismatch` before anything is sent. Calls go through the same
 * `Invocation` as untyped ones; results are converted with `toJs` and every
 * output stream in them is wrapped in a `TypedOutput`.
 *
 * A function beside the client rather than a method of it, so a page that
 * never uses contracts does not ship this code (the browser bundle budget).
 */
import {
  contractDifferences,
  resultDifference,
  ContractError,
  type AnyAgentContract,
  type ConstructorArgs,
  type MethodName,
  type ResultSchema,
} from "@golem-stream/contract";
import { decodeSchemaGraph } from "@golem-stream/schema-value";
import type { JsOf } from "@golem-stream/schema-value";
import type { Agent, AgentInvokeOptions, AgentOptions } from "./agent-options.js";
import type { AgentTypeSchema } from "./discovery.js";
import { ClientError } from "./errors.js";
import type { Invocation, InvocationResult } from "./invocation.js";
import { OutputStream } from "./output-stream.js";
import type { OutputStreams, SourceStreams, TypedOutput } from "./contract-streams.js";

/** What `typedAgent` (and, with `constructor` as well, `client.connect`) looks up: the agent type is the contract's. */
export interface ConnectOptions<C extends AnyAgentContract> {
  /** The application that deploys the agent type. */
  readonly application: string;
  /** The application's environment (`default`, `prod`, …). */
  readonly environment: string;
  /**
   * Constructor parameters as plain JavaScript, typed by the contract. Not `constructor`: every
   * object has one (`Object.prototype.constructor`, a `Function` with a `name`), so a forgotten
   * option would still compile for a constructor like `{ name: string }`.
   */
  readonly constructorArgs: ConstructorArgs<C>;
  /**
   * Picks one phantom instance among the agents of the same constructor parameters: a lower-case
   * hyphenated UUID (any version). Absent, the agent is the one its constructor parameters name.
   */
  readonly phantomId?: string;
  /**
   * Aborts the connect while it reads the catalogue (the request, the download): it rejects with a
   * `ClientError` of kind `aborted` whose `cause` is the signal's reason, and the download stops.
   * An abort while `getToken` runs takes effect when the request is made. Once the agent is
   * returned, aborting it does nothing: it cancels none of the agent's calls; give each call its
   * own (`agent.method(params, { signal })`). Anything but an `AbortSignal` is refused with
   * `invalid-argument` before the request.
   */
  readonly signal?: AbortSignal;
}

/**
 * `client.connect`'s options: as `ConnectOptions`, with the constructor's
 * parameters under `constructor` (the issue's spelling) or `constructorArgs`.
 */
export type ContractConnectOptions<C extends AnyAgentContract> = Omit<ConnectOptions<C>, "constructorArgs"> &
  ({ readonly constructor: ConstructorArgs<C> } | { readonly constructorArgs: ConstructorArgs<C> });

/**
 * The `ConnectOptions` of `client.connect`'s options. Every object has a
 * `constructor` (inherited from `Object.prototype`), so only an own one
 * counts: a forgotten option fails here instead of sending `Object`.
 */
export function contractOptions<C extends AnyAgentContract>(options: ContractConnectOptions<C>): ConnectOptions<C> {
  if (typeof options !== "object" || options === null) throw new ClientError("invalid-argument", "connect needs an options object");
  const own = (name: string) => Object.prototype.hasOwnProperty.call(options, name);
  if (own("constructorArgs")) return options as unknown as ConnectOptions<C>;
  if (!own("constructor"))
    throw new ClientError("invalid-argument", "connect needs the agent's constructor parameters: { constructor: { … } }");
  const { constructor: constructorArgs, ...rest } = options as { readonly constructor: ConstructorArgs<C> } & Omit<
    ConnectOptions<C>,
    "constructorArgs"
  >;
  return { ...rest, constructorArgs };
}

/** The arguments of a typed call: the parameter record, stream parameters as sources. */
export type CallParams<C extends AnyAgentContract, K extends MethodName<C>> = JsOf<C["methods"][K]["params"], SourceStreams>;

/** What a typed call resolves to: the result with typed output streams, `undefined` without a result. */
export type CallResult<C extends AnyAgentContract, K extends MethodName<C>> = C["methods"][K] extends { readonly result: infer R }
  ? R extends ResultSchema
    ? JsOf<R, OutputStreams>
    : undefined
  : undefined;

/** An agent typed by its contract: one method per contract method. */
export type TypedAgent<C extends AnyAgentContract> = {
  readonly [K in MethodName<C>]: (params: CallParams<C, K>, options?: AgentInvokeOptions) => TypedCall<CallResult<C, K>>;
};

/**
 * One typed call: a `Promise` of the result (`await`, `then`, `catch`, `finally`, and it goes
 * wherever a `Promise<R>` is expected: `Promise.race`, a function declared to return one); `finished`
 * and `invocation`, the untyped handle (acceptance, `cancel`, `detach`, checkpoints, events), beside it.
 *
 * Not a `Promise` subclass: its promise is made on first use of `result`, `then`, `catch` or
 * `finally`, so a failed call whose result nobody asked for (only `finished` or `invocation` was
 * used) leaves no unhandled rejection behind. Hence `instanceof Promise` is false.
 */
export class TypedCall<R> implements Promise<R> {
  #result: Promise<R> | undefined;
  readonly #checkResult: ((result: InvocationResult) => void) | undefined;

  /** The untyped handle of the call: acceptance, `cancel`, `detach`, checkpoints, events, the output streams. */
  readonly invocation: Invocation;

  /**
   * Wraps an untyped call (`agent.invoke`'s); the methods of a `TypedAgent` make these, with
   * `checkResult`, which throws when the result the server returned is not of the contract's type.
   */
  constructor(invocation: Invocation, checkResult?: (result: InvocationResult) => void) {
    this.invocation = invocation;
    this.#checkResult = checkResult;
  }

  /**
   * The result with typed streams; rejects with the invocation's `ClientError`, or with
   * `contract-mismatch` when the server returned a result of another type than the contract's
   * (its catalogue changed after the client compared them); `invocation.result` still has it, untyped.
   */
  get result(): Promise<R> {
    // Made on first use: a call whose result nobody reads must not leave a rejected promise behind.
    this.#result ??= this.invocation.result.then((result) => {
      this.#checkResult?.(result);
      return typedResult(result) as R;
    });
    return this.#result;
  }

  /** Resolves when the invocation has finished successfully (every stream ended). */
  get finished(): Promise<{ readonly kind: "success" }> {
    return this.invocation.finished;
  }

  /** `Object.prototype.toString` says `[object TypedCall]`: it is not a native promise. */
  get [Symbol.toStringTag](): string {
    return "TypedCall";
  }

  /** As `Promise.then` of `result`. */
  then<A = R, B = never>(
    onFulfilled?: ((value: R) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.result.then(onFulfilled, onRejected);
  }

  /** As `Promise.catch` of `result`: the handler gets the call's `ClientError`. */
  catch<B = never>(onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<R | B> {
    return this.result.catch(onRejected);
  }

  /** As `Promise.finally` of `result`. */
  finally(onFinally?: (() => void) | null): Promise<R> {
    return this.result.finally(onFinally);
  }
}

/** Throws `contract-mismatch` unless the served agent type agrees with the contract. */
export function checkContract(contract: AnyAgentContract, schema: AgentTypeSchema): void {
  const differences = contractDifferences(contract, schema);
  if (differences.length === 0) return;
  throw contractMismatch(`agent type ${contract.name} does not match the server's catalogue: ${differences.join("; ")}`, differences);
}

/** The `contract-mismatch` ClientError, its `cause` the `ContractError` listing each difference. */
function contractMismatch(message: string, differences: readonly string[]): ClientError {
  const cause = new ContractError(message, { code: "contract-mismatch", differences });
  return new ClientError("contract-mismatch", cause.message, { cause });
}

/** What `typedAgent` needs of a client: its `agent` call. Every `Client` is one. */
export interface AgentSource {
  /** Reads the catalogue and returns the untyped agent (`Client.agent`). */
  agent(options: AgentOptions): Promise<Agent>;
}

/**
 * Reads the catalogue, checks that it describes `contract.name` as the contract does (a
 * `contract-mismatch` ClientError otherwise) and returns an agent whose methods are typed by it.
 * An alias of `client.connect(contract, options)`, the spelling the documentation uses, as a free
 * function (it takes the constructor's parameters as `constructorArgs` only).
 */
export async function typedAgent<C extends AnyAgentContract>(
  client: AgentSource,
  contract: C,
  options: ConnectOptions<C>,
): Promise<TypedAgent<C>> {
  if (typeof contract !== "object" || contract === null || typeof contract.graphs !== "object") {
    throw new ClientError("invalid-argument", "typedAgent needs a contract made by defineAgentType");
  }
  if (typeof options !== "object" || options === null) throw new ClientError("invalid-argument", "typedAgent needs an options object");
  const { application, environment, phantomId, signal } = options;
  const agent = await client.agent({
    application,
    environment,
    agentType: contract.name,
    constructorArgs: options.constructorArgs,
    checkSchema: (schema) => checkContract(contract, schema),
    ...(phantomId === undefined ? {} : { phantomId }),
    ...(signal === undefined ? {} : { signal }),
  });
  return typedMethods(contract, agent);
}

/** The typed face of an untyped agent whose schema was checked against `contract`. */
export function typedMethods<C extends AnyAgentContract>(contract: C, agent: Agent): TypedAgent<C> {
  const methods: Record<string, (params: unknown, options?: AgentInvokeOptions) => TypedCall<unknown>> = {};
  for (const method of contract.graphs.methods) {
    // `await client.connect(…)` would call it: a thenable agent never resolves to itself.
    if (method.name === "then")
      throw new ClientError(
        "invalid-argument",
        "a contract method named then cannot be typed (the agent would be a thenable); call it with client.agent",
      );
    // Defined, not assigned: assigning `__proto__` would set the object's prototype instead.
    Object.defineProperty(methods, method.name, {
      value: (params: unknown, options?: AgentInvokeOptions) =>
        new TypedCall(agent.invoke(method.name, params, options), (result) => checkResultType(contract, method.name, result)),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return Object.freeze(methods) as TypedAgent<C>;
}

/**
 * Throws `contract-mismatch` when a call's result is not of the type the contract declares: the
 * catalogue the client checked the contract against changed since (a server started with another
 * build), and `toJs` would hand code typed by the contract a value of another shape (a `bigint`
 * where it declares a `number`, a record with other fields).
 */
function checkResultType(contract: AnyAgentContract, method: string, result: InvocationResult): void {
  const difference = resultDifference(contract, method, result.kind === "none" ? undefined : decodeSchemaGraph(result.graph));
  if (difference === undefined) return;
  throw contractMismatch(
    `agent type ${contract.name}: the server returned a result the contract does not describe: ${difference}. ` +
      "Its catalogue changed after this client compared the contract with it (a server started with another build): " +
      "connect again with a contract that matches it; call.invocation.result still has this result, untyped",
    [difference],
  );
}

function typedResult(result: InvocationResult): unknown {
  return result.kind === "none" ? undefined : typedView(result.js());
}

/** Replaces every `OutputStream` in converted data with its typed view. */
function typedView(value: unknown): unknown {
  if (value instanceof OutputStream) return new TypedOutputStream(value);
  if (Array.isArray(value)) return value.map(typedView);
  if (value instanceof Map) return new Map([...value].map(([key, item]) => [key, typedView(item)]));
  if (typeof value !== "object" || value === null) return value;
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return value; // Uint8Array, Set: no streams inside
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    Object.defineProperty(out, key, { value: typedView(item), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

class TypedOutputStream<E> implements TypedOutput<E> {
  constructor(readonly stream: OutputStream) {}

  cancel(reason?: Parameters<OutputStream["cancel"]>[0]): Promise<void> {
    return this.stream.cancel(reason);
  }

  [Symbol.asyncIterator](): AsyncIterator<E> {
    const direct = this.stream.schema?.direct;
    if (direct === "u8") return this.stream.bytes()[Symbol.asyncIterator]() as AsyncIterator<E>;
    if (direct === "binary") return this.stream.blobs()[Symbol.asyncIterator]() as AsyncIterator<E>;
    const inner = this.stream.js()[Symbol.asyncIterator]();
    return {
      next: async (): Promise<IteratorResult<E>> => {
        const step = await inner.next();
        return step.done === true ? { done: true, value: undefined } : { done: false, value: typedView(step.value) as E };
      },
      return: async (): Promise<IteratorResult<E>> => {
        await inner.return?.();
        return { done: true, value: undefined };
      },
    };
  }
}

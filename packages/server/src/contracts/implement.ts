/**
 * The contracts folder owns agent types written against a typed contract:
 * `implement` (this file) and the stream positions of a contract's values on
 * the server side.
 *
 * `implement(contract, methods)`: an agent type definition for the agent
 * host whose methods take and return plain JavaScript typed by the contract.
 * Values are converted with schema-value's `toJs`/`fromJs` (which validate),
 * never by hand; streams become async iterables on the way in and are wired
 * to `context.output` on the way out. The definition registers with
 * `StaticAgentHost` next to untyped ones.
 */
import type { AnyAgentContract, ConstructorArgs, Durability, MethodName, ResultSchema } from "@golem-stream/contract";
import {
  decodeSchemaGraph,
  fromJs,
  isDirectBinary,
  toJs,
  type FromJsHooks,
  type JsOf,
  type SchemaGraph,
  type SchemaType,
  type StreamContext,
  type StreamLeaf,
  type StreamRef,
  type ToJsHooks,
} from "@golem-stream/schema-value";
import { ProtocolError, type JsonValue, type SchemaValueJson } from "@golem-stream/wire";
import {
  PublicProducerError,
  type AgentTypeDefinition,
  type InvocationContext,
  type MethodImplementation,
  type OutputItem,
  type OutputSource,
} from "../agent-host.js";
import type { InputStreams, OutputStreams } from "./streams.js";
import { mapAsyncIterable } from "../invocation/mapped-iterable.js";
import { ResultRefused, refusedBecause } from "../invocation/failure-outcome.js";

/** The invocation context of a typed method: the untyped one plus the constructor arguments as JavaScript. */
export interface ContractContext<C extends AnyAgentContract> extends InvocationContext {
  readonly constructorArgs: ConstructorArgs<C>;
}

/** The parameters a typed method receives. */
export type ParamsIn<C extends AnyAgentContract, K extends MethodName<C>> = JsOf<C["methods"][K]["params"], InputStreams>;

/** What a typed method returns: its result as JavaScript, or nothing for a method without a result. */
export type ResultOut<C extends AnyAgentContract, K extends MethodName<C>> = C["methods"][K] extends { readonly result: infer R }
  ? R extends ResultSchema
    ? JsOf<R, OutputStreams>
    : void
  : void;

export type TypedMethod<C extends AnyAgentContract, K extends MethodName<C>> = (
  ctx: ContractContext<C>,
  params: ParamsIn<C, K>,
) => Promise<ResultOut<C, K>> | ResultOut<C, K>;

/** One implementation per method of the contract. */
export type ContractImplementation<C extends AnyAgentContract> = { readonly [K in MethodName<C>]: TypedMethod<C, K> };

/**
 * The agent type definition of `contract`, served by `methods`.
 *
 * **Bound what a method allocates from its parameters.** A parameter is
 * hostile input: a method that builds an item of `size` bytes, or `count`
 * items at once, builds what the caller asks for. The host refuses a binary
 * output item over 16 MiB (`producer-error`) and a value over the 8 MiB
 * charge, but only once the method has built it. Where the limit can be known
 * from the parameters, declare it in the contract (`t.u32({ max: ... })`,
 * `t.binary({ maxBytes })`, `t.text({ maxLength })`): the server then refuses a start asking for more with
 * `validation-error` before the method runs, as the demo's `blobs` does for
 * its `size` (at most 16 MiB) and `count`. Where it cannot, check before
 * allocating and throw a `PublicProducerError` saying which bound was hit.
 */
export function implement<C extends AnyAgentContract>(contract: C, methods: NoInfer<ContractImplementation<C>>): AgentTypeDefinition {
  if (typeof methods !== "object" || methods === null) throw new TypeError("implement needs an object of methods");
  const declared = new Set(contract.graphs.methods.map((method) => method.name));
  for (const name of Object.keys(methods)) {
    // The declared ones listed, as the CLI's invoke does: a misspelt name is seen beside the right one.
    if (!declared.has(name))
      throw new TypeError(`agent type ${contract.name} declares no method ${name} (methods: ${[...declared].join(", ") || "none"})`);
  }
  const constructorGraph = decodeSchemaGraph(contract.graphs.constructorParameters);
  const implementations: Record<string, MethodImplementation> = {};
  for (const method of contract.graphs.methods) {
    // Its own property: a method named `toString` or `constructor` must not find the inherited one.
    const handler: unknown = Object.hasOwn(methods, method.name) ? (methods as Record<string, unknown>)[method.name] : undefined;
    if (typeof handler !== "function") throw new TypeError(`agent type ${contract.name}: method ${method.name} has no implementation`);
    const implementation = typedMethod(
      handler as (ctx: InvocationContext, params: unknown) => unknown,
      constructorGraph,
      decodeSchemaGraph(method.parameters),
      method.result === undefined ? undefined : decodeSchemaGraph(method.result),
    );
    // Defined, not assigned: assigning `__proto__` would set the object's prototype, and
    // `constructor` would land on what that prototype then was.
    Object.defineProperty(implementations, method.name, { value: implementation, enumerable: true, writable: true, configurable: true });
  }
  const { name, constructorParameters, methods: graphs, config } = contract.graphs;
  // A contract of an earlier version has no durability map: every method the default.
  const durability: Readonly<Record<string, Durability>> = contract.durability ?? {};
  const descriptors = graphs.map((method) => {
    const declared = Object.hasOwn(durability, method.name) ? durability[method.name] : undefined;
    return declared === undefined ? method : { ...method, durability: declared };
  });
  return { name, constructorParameters, methods: descriptors, config, implementations };
}

function typedMethod(
  handler: (ctx: InvocationContext, params: unknown) => unknown,
  constructorGraph: SchemaGraph,
  parameters: SchemaGraph,
  result: SchemaGraph | undefined,
): MethodImplementation {
  return async (ctx) => {
    const params = toJs(ctx.parameters, parameters, undefined, inputHooks(ctx, parameters));
    const returned = await handler(withConstructorArgs(ctx, constructorGraph), params);
    if (result === undefined) return undefined;
    try {
      return toNative(returned, result, undefined, ctx);
    } catch (error) {
      // The same public reason an untyped method's result gets (invocation/method-run.ts): the
      // converter names a path in the declared schema and the rule broken, nothing of the agent's.
      if (!(error instanceof ProtocolError)) throw error;
      throw new ResultRefused(`the method's result ${refusedBecause(error)}`, { cause: error });
    }
  };
}

/** The context with `constructorArgs`, converted on first use (most methods never look). */
function withConstructorArgs(ctx: InvocationContext, graph: SchemaGraph): InvocationContext {
  let converted: { value: unknown } | undefined;
  return {
    application: ctx.application,
    environment: ctx.environment,
    agentType: ctx.agentType,
    method: ctx.method,
    constructorParameters: ctx.constructorParameters,
    parameters: ctx.parameters,
    config: ctx.config,
    signal: ctx.signal,
    inputValues: (stream) => ctx.inputValues(stream),
    inputBytes: (stream) => ctx.inputBytes(stream),
    inputBlobs: (stream) => ctx.inputBlobs(stream),
    output: (source) => ctx.output(source),
    step: (name, fn) => ctx.step(name, fn),
    now: () => ctx.now(),
    random: () => ctx.random(),
    attempt: ctx.attempt,
    get constructorArgs(): unknown {
      converted ??= { value: toJs(ctx.constructorParameters, graph) };
      return converted.value;
    },
  } as InvocationContext;
}

/** Input stream leaves become async iterables of bytes, binary items or converted elements. */
function inputHooks(ctx: InvocationContext, graph: SchemaGraph): ToJsHooks {
  const hooks: ToJsHooks = {
    stream: (leaf: StreamLeaf) => {
      const node = { kind: "stream", value: { ...leaf.ref } } as JsonValue;
      const direct = isDirectBinary(graph, leaf.elementType);
      // Opened on first iteration, as an untyped method opens its inputs when it reads them.
      if (direct === "u8") return lazy(() => ctx.inputBytes(node));
      if (direct === "binary") return lazy(() => ctx.inputBlobs(node));
      return lazy(() => convertInput(ctx.inputValues(node), graph, leaf.elementType, hooks));
    },
  };
  return hooks;
}

function lazy<T>(open: () => AsyncIterable<T>): AsyncIterable<T> {
  return { [Symbol.asyncIterator]: () => open()[Symbol.asyncIterator]() };
}

function convertInput(
  items: AsyncIterable<SchemaValueJson>,
  graph: SchemaGraph,
  type: SchemaType,
  hooks: ToJsHooks,
): AsyncIterable<unknown> {
  return mapAsyncIterable(items, (item) => toJs(item, graph, type, hooks));
}

/** Plain JavaScript -> native value, each stream position declared as an output of this invocation. */
function toNative(data: unknown, graph: SchemaGraph, type: SchemaType | undefined, ctx: InvocationContext): SchemaValueJson {
  const hooks: FromJsHooks = {
    streams: "provisional",
    stream: (source: unknown, context: StreamContext): StreamRef => {
      let adapted;
      try {
        adapted = outputSource(source, context, ctx);
      } catch (error) {
        // The agent's own code may run here (a getter, a Proxy's trap): what it throws is not the
        // server's to tell the client, which the refusal's message would (fromJs says it as given).
        if (error instanceof ProtocolError) throw error;
        throw new ProtocolError("validation-error", "an output stream's source could not be read", { cause: error });
      }
      return ctx.output(adapted).value as StreamRef;
    },
  };
  // A SchemaValue is JSON already: the payload types are the wire's.
  return fromJs(data, graph, type, hooks) as unknown as SchemaValueJson;
}

/**
 * Adapts a typed source to the host's `OutputSource`: bytes and binary items
 * pass through untouched (the server packs them); anything else is converted
 * item by item with the element schema. The adapter keeps the source's form
 * (sync, async, push), so pacing and cancellation reach it exactly as they
 * would reach an untyped source.
 */
function outputSource(source: unknown, context: StreamContext, ctx: InvocationContext): OutputSource {
  const direct = isDirectBinary(context.graph, context.elementType);
  const convert =
    direct === undefined
      ? (item: unknown) => {
          try {
            return toNative(item, context.graph, context.elementType, ctx);
          } catch (error) {
            // As a refused result's reason: the converter names the schema's path and rule, not the agent's data.
            if (!(error instanceof ProtocolError)) throw error;
            throw new PublicProducerError(`an output item ${refusedBecause(error)}`, { cause: error });
          }
        }
      : (item: unknown) => item as OutputItem;
  if (typeof source === "function") {
    const produce = source as (writer: { write(item: unknown): Promise<void>; signal: AbortSignal }) => Promise<void>;
    return (writer) => produce({ write: (item) => writer.write(convert(item)), signal: writer.signal });
  }
  if (typeof source === "object" && source !== null) {
    if (direct !== undefined && (Symbol.asyncIterator in source || Symbol.iterator in source)) return source as OutputSource;
    if (Symbol.asyncIterator in source) return mapAsyncIterable(source as AsyncIterable<unknown>, convert);
    if (Symbol.iterator in source) return mapSync(source as Iterable<unknown>, convert);
  }
  // A ProtocolError, which the converter passes on as it is (anything else becomes its bare "value is
  // not well-formed"): the refused result's public reason (typedMethod) then says what was wrong.
  throw new ProtocolError(
    "validation-error",
    `an output stream at ${context.coordinate || "the result"} must be an async iterable, an iterable or a function of a writer`,
  );
}

function* mapSync(source: Iterable<unknown>, convert: (item: unknown) => OutputItem): Generator<OutputItem> {
  for (const item of source) yield convert(item);
}

/**
 * The JavaScript types of a contract's values. Streams are what each side
 * makes of them, so the side passes its `JsStreams` (schema-value's
 * `JsOf`): the server reads input streams as async iterables and returns
 * output sources; the client passes sources and reads typed output streams.
 */
import type { JsOf, JsStreams, StreamRefs } from "@golem-stream/schema-value";
import type { AnyAgentContract, MethodSpec, ResultSchema } from "./contract.js";

/** The constructor parameters as JavaScript (a constructor has no streams). */
export type ConstructorArgs<C extends AnyAgentContract> = JsOf<C["constructor"], StreamRefs>;

/** A method's parameter record as JavaScript, streams mapped by `S`. */
export type MethodParams<M extends MethodSpec, S extends JsStreams> = JsOf<M["params"], S>;

/** A method's result as JavaScript, streams mapped by `S`; `undefined` for a method without a result. */
export type MethodResult<M extends MethodSpec, S extends JsStreams> = M extends { readonly result: infer R }
  ? R extends ResultSchema
    ? JsOf<R, S>
    : undefined
  : undefined;

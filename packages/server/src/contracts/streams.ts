/**
 * What stream positions of a contract's values are on the server side:
 * input streams arrive as async iterables, output streams are returned as
 * sources (an async iterable, an iterable or a push-style function) that the
 * host wires to the protocol. Bytes stay bytes: `stream<u8>` is read and
 * written in `Uint8Array` chunks, `stream<binary>` items are `BinaryItem`s.
 */
import type { JsOf, JsStreams } from "@golem-stream/schema-value";
import type { BinaryItem } from "../agent-host.js";

/** One element of an input stream whose element type is `I`. */
export type InputElement<I> = I extends { kind: "u8" } ? Uint8Array : I extends { kind: "binary" } ? BinaryItem : JsOf<I, InputStreams>;

/** Input streams (method parameters): `AsyncIterable<string>` for `stream<string>`, `AsyncIterable<Uint8Array>` for `stream<u8>`. */
export interface InputStreams extends JsStreams {
  readonly type: AsyncIterable<InputElement<this["inner"]>>;
}

/** One element an output stream whose element type is `I` accepts. */
export type OutputElement<I> = I extends { kind: "u8" }
  ? Uint8Array
  : I extends { kind: "binary" }
    ? Uint8Array | BinaryItem
    : JsOf<I, OutputStreams>;

/** A push-style producer of typed items; `write` resolves when backpressure allows another. */
export interface TypedOutputWriter<E> {
  write(item: E): Promise<void>;
  /** Aborted when the client cancels the stream or the invocation fails. */
  readonly signal: AbortSignal;
}

/** What a method returns where its result has an output stream. */
export type OutputSourceOf<E> = AsyncIterable<E> | Iterable<E> | ((writer: TypedOutputWriter<E>) => Promise<void>);

/** Output streams (results, and items of other output streams): sources of typed items. */
export interface OutputStreams extends JsStreams {
  readonly type: OutputSourceOf<OutputElement<this["inner"]>>;
}

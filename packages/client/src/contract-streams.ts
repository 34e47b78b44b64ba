/**
 * What stream positions of a contract's values are on the client side:
 * parameters take sources (what `agent.invoke` takes: async iterables,
 * iterables, `ReadableStream`s, `Blob`s for bytes, or an `InputStream`);
 * results and items give `TypedOutput`s, async iterables of typed elements
 * backed by the real `OutputStream` (same cursor, resume and backpressure).
 */
import type { JsOf, JsStreams } from "@golem-stream/schema-value";
import type { BinaryBlob, InputStream } from "./input-stream.js";
import type { CancelOutcome } from "./cancel-delivery.js";
import type { OutputStream } from "./output-stream.js";
import type { BlobLike, ByteSource, Source } from "./sources.js";

/** The source a parameter stream whose element type is `I` takes. */
export type SourceFor<I> = I extends { kind: "u8" }
  ? ByteSource
  : I extends { kind: "binary" }
    ? Source<Uint8Array | BinaryBlob | BlobLike>
    : Source<JsOf<I, SourceStreams>>;

/** Input streams (method parameters): a source of the element's JavaScript form, or an `InputStream`. */
export interface SourceStreams extends JsStreams {
  /** A stream parameter of element type `inner` takes this. */
  readonly type: SourceFor<this["inner"]> | InputStream;
}

/** One element read from an output stream whose element type is `I`. */
export type OutputElement<I> = I extends { kind: "u8" } ? Uint8Array : I extends { kind: "binary" } ? BinaryBlob : JsOf<I, OutputStreams>;

/** An output stream of typed elements: `stream<u8>` gives byte batches, `stream<binary>` blobs, anything else converted items. */
export interface TypedOutput<E> extends AsyncIterable<E> {
  /** The untyped stream underneath: cursor, outcome, `readable()`, queue state. */
  readonly stream: OutputStream;
  /** Cancels this stream (see `OutputStream.cancel`). */
  cancel(reason?: Parameters<OutputStream["cancel"]>[0]): Promise<void>;
}

/** Output streams (results, and items of other output streams). */
export interface OutputStreams extends JsStreams {
  /** An output stream of element type `inner` is this. */
  readonly type: TypedOutput<OutputElement<this["inner"]>>;
}

export type { CancelOutcome };

/**
 * Input stream bindings: how an application puts a source where a stream
 * leaf belongs in the method parameters. A binding is affine — it can be
 * placed at one structural coordinate of one invocation only, exactly like
 * the stream reference it becomes (protocol 3.2).
 */
import type { ClientCancelReason, JsonPrimitive, SchemaValueJson } from "@golem-stream/wire";
import { isMimeType } from "@golem-stream/wire/internal";
import { ClientError, invalidCancelReason, isClientCancelReason } from "./errors.js";
import { assertSource, pullFrom, readingBlobItems, type BlobLike, type ByteSource, type PullIterator, type Source } from "./sources.js";

/** How items of the stream travel: packed bytes, one binary message per item, or JSON items. */
export type InputElementKind = "u8" | "binary" | "value";

/** One item of a `stream<binary>`, as a source yields it and as `OutputStream.blobs()` gives it: bytes, optionally with a MIME type. */
export interface BinaryBlob {
  /** The item's bytes. An input keeps them, not copied, until acknowledged: do not write into them. */
  readonly bytes: Uint8Array;
  /** Its MIME type (`type/subtype`), if it has one; an input item without one gets the binding's `mimeType`. */
  readonly mimeType?: string;
}

/**
 * A native SchemaValue in which any node may be an `InputStream` binding. The
 * runtime replaces each binding by `{"kind":"stream","value":{"provisionalRef":…}}`.
 */
export type ParamNode = InputStream | { readonly kind: string; readonly value: ParamPayload };
/** The `value` of a `ParamNode`: native SchemaValue JSON in which any node may be an `InputStream`. */
export type ParamPayload = JsonPrimitive | InputStream | readonly ParamPayload[] | { readonly [member: string]: ParamPayload };

/**
 * A binding of an input stream to its source, made by `inputStream.*`: put it where the method's
 * parameters have a stream. It can be placed once, at one place of one invocation.
 */
export class InputStream {
  /** How its items travel (set by the `inputStream` constructor that made it). */
  readonly element: InputElementKind;
  /** For `value` streams: turns one source item into a native node (may contain nested bindings). */
  readonly encode: ((item: unknown) => ParamNode) | undefined;
  /** For `binary` streams: the MIME type of items that give none (`inputStream.binary`'s option). */
  readonly mimeType: string | undefined;
  /**
   * @internal Where a typed call placed it (`hexdump.data`): an item of a `stream<u8>` or
   * `stream<binary>` that is not bytes is refused naming it, as a value item is.
   */
  place: string | undefined;
  readonly #source: Source<unknown> | BlobLike;
  #claimed = false;
  #failure: unknown;
  #cancel: ((reason: ClientCancelReason) => void) | undefined;

  constructor(
    element: InputElementKind,
    source: Source<unknown> | BlobLike,
    options: { encode?: (item: unknown) => ParamNode; mimeType?: string } = {},
  ) {
    assertSource(source);
    if (options.mimeType !== undefined && !isMimeType(options.mimeType)) {
      throw new ClientError("invalid-argument", "mimeType must be a MIME type (type/subtype)");
    }
    this.element = element;
    this.#source = source;
    this.encode = options.encode;
    this.mimeType = options.mimeType;
  }

  /** The error the source threw, once it failed (the server saw `source-unavailable`). */
  get failure(): unknown {
    return this.#failure;
  }

  /** @internal Claims the binding for one coordinate; a second claim is an affine violation. */
  claim(): PullIterator<unknown> {
    if (this.#claimed) {
      throw new ClientError("invalid-argument", "an input stream can be placed at one coordinate of one invocation only", {
        code: "stream-already-consumed",
      });
    }
    this.#claimed = true;
    const items = pullFrom(this.#source);
    return this.element === "binary" ? readingBlobItems(items) : items;
  }

  /**
   * Ends this input early: the server records the stream as cancelled and the
   * agent sees its source fail. A no-op before the invocation claimed it or
   * after its terminal.
   */
  cancel(reason: ClientCancelReason = "cancelled"): void {
    if (!isClientCancelReason(reason)) throw invalidCancelReason(reason);
    this.#cancel?.(reason);
  }

  /** @internal */
  recordFailure(error: unknown): void {
    this.#failure ??= error;
  }

  /** @internal Set by the feeder that owns this binding. */
  onCancel(handler: (reason: ClientCancelReason) => void): void {
    this.#cancel = handler;
  }
}

const asNative = (item: unknown): ParamNode => item as ParamNode;

/** A `stream<string>` item as its node; any other item is refused naming its index, as a typed call's item is (`item 2: …`). */
function stringNode(item: unknown, index: number): ParamNode {
  if (typeof item === "string") return { kind: "string", value: item };
  const what =
    item === null
      ? "null"
      : item instanceof Uint8Array
        ? 'bytes (decode them first, e.g. setEncoding("utf8") on a Node stream, or use inputStream.bytes)'
        : item === undefined
          ? "undefined"
          : `${typeof item === "object" ? "an" : "a"} ${typeof item}`;
  throw new ClientError("invalid-argument", `item ${index}: a string input yielded ${what}, not a string`);
}

/** Constructors for the three element kinds, plus string and JS conveniences. */
export const inputStream = {
  /** `stream<u8>`: each chunk is sent as packed batches of at most 1 MiB; a `Blob` or `File` is read through `stream()`. */
  bytes(source: ByteSource): InputStream {
    return new InputStream("u8", source);
  },
  /** `stream<binary>`: each chunk (bytes, `{bytes, mimeType}`, or a `Blob`/`File` with its `type`) is one item. */
  binary(source: Source<Uint8Array | BinaryBlob | BlobLike>, options: { mimeType?: string } = {}): InputStream {
    return new InputStream("binary", source, options ?? {});
  },
  /** Any other element type: each item is a native SchemaValue node, or `encode(item)` makes one. */
  values<T = SchemaValueJson>(source: Source<T>, encode?: (item: T) => ParamNode): InputStream {
    if (encode !== undefined && typeof encode !== "function") throw new ClientError("invalid-argument", "encode must be a function");
    return new InputStream("value", source as Source<unknown>, {
      encode: encode === undefined ? asNative : (item) => encode(item as T),
    });
  },
  /**
   * `stream<string>` from JS strings. Any other item fails the input here (`invalid-argument`,
   * the server told `source-unavailable`) instead of reaching the server, which would close the
   * connection over it (`validation-error`).
   */
  strings(source: Source<string>): InputStream {
    // The feeder encodes each item once, in the order the source yields them: the count is its index.
    let index = 0;
    return inputStream.values(source, (item) => stringNode(item, index++));
  },
};

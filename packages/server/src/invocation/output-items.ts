/**
 * What an output producer's item becomes: validated against its stream's
 * element type, and split into the log events the store records (a large
 * `u8` chunk becomes several packed batches). Each event is built once its
 * sequence is known, which is when the streams a value introduces are
 * prepared and its placeholders swapped for their tokens.
 *
 * Apart from the producers (output-producers.ts), which decide when an
 * event is recorded, so that what a producer may yield, and what is
 * refused, reads in one place.
 */
import { canonicalJson, LIMITS, ProtocolError, type JsonValue, type SchemaValueJson } from "@golem-stream/wire";
import type { StreamLeaf } from "@golem-stream/schema-value";
import { PublicProducerError, type BinaryItem, type OutputItem } from "../agent-host.js";
import type { OutputEvent, StreamParent } from "../store/session-store.js";
import { canonicalValue, decodeValue, utf8Bytes, type SchemaGraph } from "../values.js";
import { checkBinaryItem, checkU8Items } from "../direct-binary-items.js";
import { ITEM_TOO_LARGE, outputItemFits } from "./message-room.js";
import { refusedBecause } from "./failure-outcome.js";
import { isBinaryItem } from "./output-source.js";
import { isMimeType } from "@golem-stream/wire/internal";
import type { PendingStream, StreamState } from "./stream-state.js";

/** One output event, validated, waiting for its sequence. */
export interface PreparedEvent {
  /** Bytes it will hold until committed (an estimate for values: their byte charge). */
  readonly size: number;
  build(sequence: bigint): { event: OutputEvent; introduced: readonly PendingStream[] };
}

/** What preparing an item needs of the output side: its placeholders, and the streams a value introduces. */
export interface ItemOutputs {
  /** Throws unless every leaf is a placeholder that `context.output` declared. */
  checkPlaceholders(leaves: readonly StreamLeaf[]): void;
  /** The streams an item introduces, prepared and not yet registered. */
  prepareStreams(leaves: readonly StreamLeaf[], graph: SchemaGraph, parent: StreamParent): PendingStream[];
  /** Swaps placeholders for stream tokens and binds each new stream to its source. */
  expose(value: SchemaValueJson, leaves: readonly StreamLeaf[], introduced: readonly PendingStream[]): SchemaValueJson;
}

/** What an item that introduces no stream (most) hands on: a shared empty list. */
const NO_STREAMS: readonly PendingStream[] = Object.freeze([]);

/**
 * Validates one produced item and splits it into events (a large u8 chunk
 * becomes several packed batches). Each event is built once its sequence
 * is known.
 */
export function prepareOutputItem(stream: StreamState, item: OutputItem, outputs: ItemOutputs): PreparedEvent[] {
  const itemEvent = (sequence: bigint, itemCount: bigint, data: Uint8Array, mimeType?: string): OutputEvent => ({
    event: "item",
    streamId: stream.streamId,
    sequence,
    itemCount,
    data,
    mimeType,
  });
  switch (stream.elementKind) {
    case "u8": {
      if (!(item instanceof Uint8Array)) throw new PublicProducerError("a stream<u8> producer must yield bytes");
      checkU8Items(stream.graph, item);
      const batches: Uint8Array[] = [];
      for (let at = 0; at < item.length; at += LIMITS.maxPackedU8PayloadBytes) {
        batches.push(item.slice(at, at + LIMITS.maxPackedU8PayloadBytes));
      }
      return batches.map((batch) => ({
        size: batch.length,
        build: (sequence) => ({ event: itemEvent(sequence, BigInt(batch.length), batch), introduced: [] }),
      }));
    }
    case "binary": {
      if (!(item instanceof Uint8Array) && !isBinaryItem(item)) {
        throw new PublicProducerError("a stream<binary> producer must yield bytes");
      }
      const blob: BinaryItem = item instanceof Uint8Array ? { bytes: item } : item;
      if (blob.bytes.length > LIMITS.maxBinaryPayloadBytes) throw new PublicProducerError("a binary item exceeds 16 MiB");
      const mimeType = wireMimeType(blob.mimeType);
      checkBinaryItem(stream.graph, blob.bytes.length, mimeType);
      const copy = blob.bytes.slice();
      return [{ size: copy.length, build: (sequence) => ({ event: itemEvent(sequence, 1n, copy, mimeType), introduced: [] }) }];
    }
    case "value": {
      if (item instanceof Uint8Array || isBinaryItem(item)) {
        throw new PublicProducerError("this stream's producer must yield schema values");
      }
      let decoded: ReturnType<typeof decodeValue>;
      try {
        decoded = decodeValue(item as unknown as JsonValue, stream.graph, "provisional", "item");
      } catch (error) {
        throw refusedItem(error);
      }
      outputs.checkPlaceholders(decoded.streams);
      const build = (sequence: bigint): { event: OutputEvent; introduced: readonly PendingStream[] } => {
        // Most items introduce no stream: no parent to describe, nothing to prepare.
        const introduced =
          decoded.streams.length === 0
            ? NO_STREAMS
            : outputs.prepareStreams(decoded.streams, stream.graph, { kind: "item", streamId: stream.streamId, sequence });
        // A value with no stream is the decoder's own normalized copy: the
        // schema-value writer gives its canonical text (byte for byte what
        // canonicalJson gives) without the generic sort and cycle checks.
        // One with streams has had its placeholders swapped: generic text.
        let text: string;
        try {
          text =
            decoded.streams.length === 0
              ? canonicalValue(decoded)
              : canonicalJson(
                  outputs.expose(decoded.value as unknown as SchemaValueJson, decoded.streams, introduced) as unknown as JsonValue,
                );
        } catch (error) {
          // Past the bound the writers stop at, the item could never be sent.
          if (error instanceof ProtocolError && error.code === "limit-exceeded")
            throw new PublicProducerError(ITEM_TOO_LARGE, { cause: error });
          throw error;
        }
        const data = utf8Bytes(text);
        // Never commit an event that no attachment could send (message-room.ts).
        if (
          !outputItemFits(
            data.length,
            introduced.map((p) => p.state.token),
          )
        )
          throw new PublicProducerError(ITEM_TOO_LARGE);
        return { event: itemEvent(sequence, 1n, data), introduced };
      };
      return [{ size: decoded.byteCharge, build }];
    }
  }
}

/**
 * A produced binary item's `mimeType` as the wire carries it: `type/subtype`, its parameters left
 * out (`text/html; charset=utf-8` as `text/html`), as the client does with a `Blob`'s type. Checked
 * here, where the agent produced it: stored unchecked, an invalid one was refused only when the
 * item was sent, at every resume, and the invocation could never be delivered again.
 */
function wireMimeType(mimeType: unknown): string | undefined {
  if (mimeType === undefined) return undefined;
  const bare = typeof mimeType === "string" ? mimeType.split(";", 1)[0]!.trim() : undefined;
  if (bare === undefined || !isMimeType(bare)) {
    throw new PublicProducerError("a binary item's mimeType must be a MIME type such as text/plain");
  }
  return bare;
}

/** A refusal of the element schema's, as the caller is told it (`refusedBecause`). */
function refusedItem(error: unknown): unknown {
  return error instanceof ProtocolError ? new PublicProducerError(`an output item ${refusedBecause(error)}`, { cause: error }) : error;
}

/**
 * The element restrictions of a direct-binary stream's items (decisions-v1
 * section 3: a stream whose element resolves to `u8` or `binary` carries raw
 * bytes in binary messages). The SchemaValue decoder never sees those items,
 * yet protocol sections 3.1 and 3.3 validate every stream item against the
 * element schema pinned to its channel, so the restrictions are checked here,
 * on input and on an agent's output alike.
 */
import { ProtocolError } from "@golem-stream/wire";
import type { NumericBound, SchemaGraph } from "@golem-stream/schema-value";

/** Checks a direct-binary item against its element's binary restrictions. */
export function checkBinaryItem(graph: SchemaGraph, length: number, mimeType: string | undefined): void {
  const root = graph.resolve(graph.root);
  if (root.kind !== "binary") return;
  const r = root.value.restrictions;
  if (mimeType !== undefined && r.mimeTypes !== undefined && !r.mimeTypes.includes(mimeType)) {
    throw new ProtocolError("validation-error", "the item's MIME type is not allowed by the stream's element schema");
  }
  if (r.minBytes !== undefined && length < r.minBytes) {
    throw new ProtocolError("validation-error", "the item is shorter than the stream's element schema allows");
  }
  if (r.maxBytes !== undefined && length > r.maxBytes) {
    throw new ProtocolError("validation-error", "the item is longer than the stream's element schema allows");
  }
}

/** The bytes a `stream<u8>`'s element allows, from its `min` and `max`; undefined when it allows all 256. */
interface ByteRange {
  readonly min: number;
  readonly max: number;
}

/** Per element graph: resolved once, as a stream's every batch is checked against it. */
const ranges = new WeakMap<SchemaGraph, ByteRange | null>();

/**
 * Checks each byte of a `stream<u8>` batch (each is one item) against the
 * element's numeric restrictions. A u8 element without `min` or `max`, the
 * usual case, costs one lookup per batch, not a scan.
 */
export function checkU8Items(graph: SchemaGraph, bytes: Uint8Array): void {
  const range = byteRange(graph);
  if (range === undefined) return;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    if (byte < range.min || byte > range.max) {
      throw new ProtocolError(
        "validation-error",
        `item ${i} of the batch is ${byte}, outside what the stream's element schema allows (${range.min} to ${range.max})`,
      );
    }
  }
}

function byteRange(graph: SchemaGraph): ByteRange | undefined {
  let range = ranges.get(graph);
  if (range === undefined) {
    range = null;
    const root = graph.resolve(graph.root);
    const restrictions = root.kind === "u8" ? root.value.restrictions : undefined;
    if (restrictions !== undefined) {
      const min = restrictions.min === undefined ? 0 : Math.max(0, Math.ceil(boundNumber(restrictions.min)));
      const max = restrictions.max === undefined ? 255 : Math.min(255, Math.floor(boundNumber(restrictions.max)));
      if (min > 0 || max < 255) range = { min, max };
    }
    ranges.set(graph, range);
  }
  return range ?? undefined;
}

/** A bound as a number (a u8's bounds are small integers; a float bound is its f64 from its bits). */
function boundNumber(bound: NumericBound): number {
  if (bound.kind !== "float-bits") return Number(BigInt(bound.value));
  return new Float64Array(new BigUint64Array([BigInt(bound.value)]).buffer)[0]!;
}

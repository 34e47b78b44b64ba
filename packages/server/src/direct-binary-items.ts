/**
 * The element restrictions of a direct-binary stream's items (decisions-v1
 * section 3: a stream whose element resolves to `u8` or `binary` carries raw
 * bytes in binary messages). The SchemaValue decoder never sees those items,
 * yet protocol sections 3.1 and 3.3 validate every stream item against the
 * element schema pinned to its channel, so the restrictions are checked here,
 * on input and on an agent's output alike.
 */
import { ProtocolError } from "@golem-stream/wire";
import { decodeSchemaValue, type SchemaGraph } from "@golem-stream/schema-value";

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

/** Per element graph: which of the 256 bytes its element allows (1) or not (0); null when it allows all. */
const allowedBytes = new WeakMap<SchemaGraph, Uint8Array | null>();

/**
 * Checks each byte of a `stream<u8>` batch (each is one item) against the
 * element's numeric restrictions. A u8 element without `min` or `max`, the
 * usual case, costs one lookup per batch, not a scan.
 */
export function checkU8Items(graph: SchemaGraph, bytes: Uint8Array): void {
  const allowed = allowedBytesOf(graph);
  if (allowed === undefined) return;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    if (allowed[byte] === 0) {
      throw new ProtocolError(
        "validation-error",
        `item ${i} of the batch is ${byte}, outside what the stream's element schema allows (${allowedRange(allowed)})`,
      );
    }
  }
}

/**
 * The bytes a restricted u8 element allows, as the SchemaValue decoder judges
 * each of the 256 as a `u8` item (its bounds' kinds and comparisons are the
 * decoder's own): worked out once per graph, as a stream's every batch is
 * checked against it.
 */
function allowedBytesOf(graph: SchemaGraph): Uint8Array | undefined {
  let allowed = allowedBytes.get(graph);
  if (allowed === undefined) {
    const root = graph.resolve(graph.root);
    const restricted = root.kind === "u8" && (root.value.restrictions?.min !== undefined || root.value.restrictions?.max !== undefined);
    allowed = restricted ? Uint8Array.from({ length: 256 }, (_, byte) => (decodes(graph, byte) ? 1 : 0)) : null;
    allowedBytes.set(graph, allowed);
  }
  return allowed ?? undefined;
}

function decodes(graph: SchemaGraph, byte: number): boolean {
  try {
    decodeSchemaValue({ kind: "u8", value: byte }, graph);
    return true;
  } catch {
    return false;
  }
}

/** `10 to 20`: the first and the last byte allowed (`none` when none is). */
function allowedRange(allowed: Uint8Array): string {
  const first = allowed.indexOf(1);
  return first < 0 ? "none" : `${first} to ${allowed.lastIndexOf(1)}`;
}

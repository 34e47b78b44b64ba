/**
 * Checks a direct-binary output item against its element schema (decisions §3: a stream whose
 * element resolves to `u8` or `binary` carries raw bytes in binary messages). The SchemaValue
 * decoder never sees those items, yet protocol 2 makes the client, a decoder too, reject values
 * that do not match the stream element schema, and 3.1 names the restrictions: numeric ranges,
 * binary MIME allow-lists, minimum and maximum lengths. A violation is what a text item off its
 * schema is: a `server-violation` with code `validation-error`.
 */
import { decodeSchemaValue } from "@golem-stream/schema-value";
import { violation, type ClientError } from "./errors.js";
import type { ElementSchema } from "./schema.js";

/** One `output-binary` item: its MIME type (matched exactly, decisions §3) and length. */
export function checkBinaryItem(schema: ElementSchema, length: number, mimeType: string | undefined): void {
  const element = schema.graph.resolve(schema.elementType);
  if (element.kind !== "binary") return;
  const { mimeTypes, minBytes, maxBytes } = element.value.restrictions;
  if (mimeType !== undefined && mimeTypes !== undefined && !mimeTypes.includes(mimeType)) {
    throw invalidItem(`its MIME type "${mimeType}" is not one the stream's element schema allows`);
  }
  if (minBytes !== undefined && length < minBytes) throw invalidItem(`it has ${length} bytes, fewer than ${minBytes}`);
  if (maxBytes !== undefined && length > maxBytes) throw invalidItem(`it has ${length} bytes, more than ${maxBytes}`);
}

/** Per element schema: which of the 256 bytes its `u8` element allows (1) or not (0); null when it allows all. */
const allowedBytes = new WeakMap<ElementSchema, Uint8Array | null>();

/** One `output-u8` batch: each byte is an item, checked against the element's numeric restrictions. */
export function checkU8Items(schema: ElementSchema, bytes: Uint8Array): void {
  const allowed = allowedBytesOf(schema);
  if (allowed === null) return;
  for (let i = 0; i < bytes.length; i++) {
    if (allowed[bytes[i]!] === 0) throw invalidItem(`byte ${i} of the batch is ${bytes[i]}, outside the element schema's range`);
  }
}

/**
 * Worked out once per stream, as the decoder judges each of the 256 values as a `u8` item (its
 * bounds and comparisons are the decoder's own): an unrestricted element, the usual case, costs
 * one lookup per batch instead of a scan.
 */
function allowedBytesOf(schema: ElementSchema): Uint8Array | null {
  let allowed = allowedBytes.get(schema);
  if (allowed === undefined) {
    const element = schema.graph.resolve(schema.elementType);
    const restricted =
      element.kind === "u8" && (element.value.restrictions?.min !== undefined || element.value.restrictions?.max !== undefined);
    allowed = restricted ? Uint8Array.from({ length: 256 }, (_, byte) => (decodes(schema, byte) ? 1 : 0)) : null;
    allowedBytes.set(schema, allowed);
  }
  return allowed;
}

function decodes(schema: ElementSchema, byte: number): boolean {
  try {
    decodeSchemaValue({ kind: "u8", value: byte }, schema.graph, { type: schema.elementType });
    return true;
  } catch {
    return false;
  }
}

function invalidItem(why: string): ClientError {
  return violation(`server sent an output item that does not match its stream's element schema: ${why}`, "validation-error");
}

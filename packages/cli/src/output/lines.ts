/**
 * The JSON lines `invoke` and `resume` print for output events, one object
 * per line: item lines (`{"stream","item"}`, `{"stream","base64"}`) by
 * default, event lines (`{"event":...}`) with `--output json`. Pure: data in,
 * JSON out.
 */
import type { OutputChunk } from "@golem-stream/client";
import type { StreamOutcome } from "@golem-stream/client";
import type { JsonObject, JsonValue, SchemaValueJson } from "@golem-stream/wire";

export type LineFormat = "lines" | "json";

/** Raw bytes: a packed `stream<u8>` batch or one `stream<binary>` item. */
export function isBytes(chunk: OutputChunk): chunk is Uint8Array | { readonly bytes: Uint8Array; readonly mimeType?: string } {
  return chunk instanceof Uint8Array || ("bytes" in chunk && chunk.bytes instanceof Uint8Array);
}

export interface ChunkLine {
  readonly json: JsonObject;
  /** Logical items the chunk carries (every byte of a packed batch is one). */
  readonly items: number;
  /** Payload bytes for progress; undefined means "the printed line's length". */
  readonly bytes: number | undefined;
}

/**
 * The line for one output chunk of stream `name`. `plain` is the item as
 * plain JSON when its type is known; otherwise the native value is printed.
 */
export function chunkLine(
  format: LineFormat,
  name: string,
  streamToken: string,
  chunk: OutputChunk,
  plain: JsonValue | undefined,
): ChunkLine {
  if (chunk instanceof Uint8Array) {
    const json: JsonObject =
      format === "json" ? { event: "bytes", stream: name, base64: base64(chunk) } : { stream: name, base64: base64(chunk) };
    return { json, items: chunk.length, bytes: chunk.length };
  }
  if (isBytes(chunk)) {
    const mime: JsonObject = chunk.mimeType === undefined ? {} : { mimeType: chunk.mimeType };
    const json: JsonObject =
      format === "json"
        ? { event: "blob", stream: name, base64: base64(chunk.bytes), ...mime }
        : { stream: name, base64: base64(chunk.bytes), ...mime };
    return { json, items: 1, bytes: chunk.bytes.length };
  }
  const value = nativeJson(chunk as SchemaValueJson);
  const json: JsonObject =
    format === "json"
      ? { event: "item", stream: name, streamToken, value }
      : plain === undefined
        ? { stream: name, native: value }
        : { stream: name, item: plain };
  return { json, items: 1, bytes: undefined };
}

/**
 * The `end` event's outcome: the server's terminal, `already-delivered` for a
 * stream an earlier run already saw end (its outcome is not known here), or
 * `null` when this run stopped before the terminal arrived.
 */
export function outcomeJson(outcome: StreamOutcome): JsonObject | null {
  switch (outcome.kind) {
    case "already-delivered":
      return { kind: "already-delivered" };
    case "detached":
      return null;
    case "ok":
      return { kind: "ok" };
    case "error":
      return { kind: "error", code: outcome.code, message: outcome.message };
    case "cancelled":
      return { kind: "cancelled", reason: outcome.reason };
  }
}

/** A native value node as a JSON object (the wire model types it apart from JSON). */
export function nativeJson(value: SchemaValueJson): JsonObject {
  return { kind: value.kind, value: value.value };
}

function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}

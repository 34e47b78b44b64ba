/** Tiny builders and readers for the native SchemaValue JSON the demo methods use. */
import { ProtocolError, type SchemaValueJson } from "@golem-stream/wire";
import { payloadOf, recordField } from "../agent-values.js";

export const str = (value: string): SchemaValueJson => ({ kind: "string", value });
export const u32 = (value: number): SchemaValueJson => ({ kind: "u32", value });
export const u64 = (value: bigint): SchemaValueJson => ({ kind: "u64", value: value.toString() });
export const record = (...fields: SchemaValueJson[]): SchemaValueJson => ({
  kind: "record",
  value: { fields: fields.map((field) => ({ kind: field.kind, value: field.value })) },
});

/** The `index`-th field of a record value (already validated by the server). */
export const field = recordField;

/** The payload of a validated u32 field. */
export function u32Field(value: SchemaValueJson, index: number): number {
  const payload = payloadOf(recordField(value, index));
  if (typeof payload !== "number") throw new ProtocolError("validation-error", "expected a u32 field");
  return payload;
}

/** The payload of a validated string item. */
export function stringOf(value: SchemaValueJson): string {
  if (typeof value.value !== "string") throw new ProtocolError("validation-error", "expected a string");
  return value.value;
}

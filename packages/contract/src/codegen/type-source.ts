/**
 * One SchemaType as the `t` builder expression that builds it exactly:
 * `decodeSchemaGraph` of what the expression returns equals the decoded
 * original member for member (metadata, restrictions and order included).
 */
import type { JsonValue, Metadata, SchemaType } from "@golem-stream/schema-value";
import { isIntegerLike, propertyKey } from "./identifiers.js";

/** How a `ref` is written: the const holding the def's body when the ref may be typed by it, else nothing. */
export type RefNamer = (id: string) => string | undefined;

export function typeSource(type: SchemaType, refName: RefNamer): string {
  const of = (inner: SchemaType) => typeSource(inner, refName);
  const metadata = (type.value as { metadata?: Metadata }).metadata;
  const built = bareTypeSource(type, of, refName);
  return metadata === undefined ? built : `t.meta(${built}, ${literal(metadata as JsonValue)})`;
}

function bareTypeSource(type: SchemaType, of: (inner: SchemaType) => string, refName: RefNamer): string {
  switch (type.kind) {
    case "ref": {
      const target = refName(type.value.id);
      return `t.ref${target === undefined ? "" : `<typeof ${target}>`}(${JSON.stringify(type.value.id)})`;
    }
    case "bool":
    case "char":
    case "string":
    case "datetime":
    case "duration":
      return `t.${type.kind}()`;
    case "s8":
    case "s16":
    case "s32":
    case "s64":
    case "u8":
    case "u16":
    case "u32":
    case "u64":
    case "f32":
    case "f64":
      return `t.${type.kind}(${type.value.restrictions === undefined ? "" : literal(type.value.restrictions)})`;
    case "record": {
      const { fields } = type.value;
      // `t.record` takes an object: integer-like names would be reordered and
      // a field's metadata has no place there, so those records list entries.
      if (fields.some((f) => f.metadata !== undefined || isIntegerLike(f.name))) {
        return `t.recordOf([${fields.map((f) => `[${[JSON.stringify(f.name), of(f.body), ...optional(f.metadata)].join(", ")}]`).join(", ")}])`;
      }
      return `t.record({${fields.length === 0 ? "" : ` ${fields.map((f) => `${propertyKey(f.name)}: ${of(f.body)}`).join(", ")} `}})`;
    }
    case "variant": {
      const { cases } = type.value;
      const payload = (p: SchemaType | undefined) => (p === undefined ? "null" : of(p));
      if (cases.some((c) => c.metadata !== undefined || isIntegerLike(c.name))) {
        return `t.variantOf([${cases.map((c) => `[${[JSON.stringify(c.name), payload(c.payload), ...optional(c.metadata)].join(", ")}]`).join(", ")}])`;
      }
      return `t.variant({${cases.length === 0 ? "" : ` ${cases.map((c) => `${propertyKey(c.name)}: ${payload(c.payload)}`).join(", ")} `}})`;
    }
    case "enum":
      return `t.enum(${literal(type.value.cases)})`;
    case "flags":
      return `t.flags(${literal(type.value.flags)})`;
    case "tuple":
      return `t.tuple(${type.value.elements.map(of).join(", ")})`;
    case "list":
      return `t.list(${of(type.value.element)})`;
    case "fixed-list":
      return `t.fixedList(${of(type.value.element)}, ${type.value.length})`;
    case "map":
      return `t.map(${of(type.value.key)}, ${of(type.value.value)})`;
    case "option":
      return `t.option(${of(type.value.inner)})`;
    case "stream":
      return `t.stream(${of(type.value.inner)})`;
    case "result": {
      const { ok, err } = type.value.spec;
      const members = [...(ok === undefined ? [] : [`ok: ${of(ok)}`]), ...(err === undefined ? [] : [`err: ${of(err)}`])];
      return `t.result({${members.length === 0 ? "" : ` ${members.join(", ")} `}})`;
    }
    case "text":
    case "binary":
    case "url": {
      const restrictions = literal(type.value.restrictions);
      return `t.${type.kind}(${restrictions === "{}" ? "" : restrictions})`;
    }
    case "path":
    case "quantity":
      return `t.${type.kind}(${literal(type.value.spec)})`;
    case "union": {
      const branches = type.value.spec.branches.map((b) => {
        const members = [`tag: ${JSON.stringify(b.tag)}`, `body: ${of(b.body)}`, `discriminator: ${literal(b.discriminator as JsonValue)}`];
        if (b.metadata !== undefined) members.push(`metadata: ${literal(b.metadata as JsonValue)}`);
        return `{ ${members.join(", ")} }`;
      });
      return `t.union(${branches.join(", ")})`;
    }
    case "secret":
    case "quota-token":
    case "permission-card":
    case "future":
      return `t.hostManaged(${JSON.stringify(type.kind)}, ${literal(type.value)})`;
  }
}

function optional(metadata: Metadata | undefined): string[] {
  return metadata === undefined ? [] : [literal(metadata as JsonValue)];
}

/** A JSON value as a JavaScript literal with exactly its members (keys bare where they can be). */
export function literal(value: JsonValue | object): string {
  if (Array.isArray(value)) return `[${value.map((item: JsonValue) => literal(item)).join(", ")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value as Record<string, JsonValue>).filter(([, member]) => member !== undefined);
    return entries.length === 0 ? "{}" : `{ ${entries.map(([key, member]) => `${propertyKey(key)}: ${literal(member)}`).join(", ")} }`;
  }
  return JSON.stringify(value);
}

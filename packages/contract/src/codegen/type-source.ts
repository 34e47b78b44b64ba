/**
 * One SchemaType as the `t` builder expression that builds it exactly:
 * `decodeSchemaGraph` of what the expression returns equals the decoded
 * original member for member (metadata, restrictions and order included).
 *
 * Layout: an expression stays on one line while it fits `LINE_WIDTH`;
 * otherwise a record, variant, tuple or union puts one member per line, one
 * level deeper. Each node is laid out once (children at the deeper indent;
 * a child that fits there also fits on its parent's one line), so the cost
 * is linear in the size of the type.
 */
import type { JsonValue, Metadata, SchemaType } from "@golem-stream/schema-value";
import { isIntegerLike, propertyKey } from "./identifiers.js";

/** Longest generated line, indentation included, before a list breaks one member per line. */
export const LINE_WIDTH = 100;
const STEP = "  ";

/** How a `ref` is written: the const holding the def's body when the ref may be typed by it, else nothing. */
export type RefNamer = (id: string) => string | undefined;

/** `open` items `close` on one line when they fit at `indent`, otherwise one item per line. */
export function layout(open: string, items: readonly string[], close: string, indent: string): string {
  const oneLine = `${open}${items.join(", ")}${close}`;
  if (items.length === 0 || (!oneLine.includes("\n") && indent.length + oneLine.length <= LINE_WIDTH)) return oneLine;
  return `${open.trimEnd()}\n${items.map((item) => `${indent}${STEP}${item},`).join("\n")}\n${indent}${close.trimStart()}`;
}

/** The builder expression of `type`, laid out for a line that starts with `indent`. */
export function typeSource(type: SchemaType, refName: RefNamer, indent = ""): string {
  const metadata = (type.value as { metadata?: Metadata }).metadata;
  if (metadata === undefined) return bareTypeSource(type, refName, indent);
  const inner = indent + STEP;
  return layout("t.meta(", [bareTypeSource(type, refName, inner), literal(metadata as JsonValue)], ")", indent);
}

function bareTypeSource(type: SchemaType, refName: RefNamer, indent: string): string {
  const inner = indent + STEP;
  // Single-argument wrappers hug their argument: it is laid out at this line's indent.
  const of = (child: SchemaType) => typeSource(child, refName, indent);
  const item = (child: SchemaType) => typeSource(child, refName, inner);
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
        const entries = fields.map((f) => `[${[JSON.stringify(f.name), item(f.body), ...optional(f.metadata)].join(", ")}]`);
        return layout("t.recordOf([", entries, "])", indent);
      }
      if (fields.length === 0) return "t.record({})";
      return layout(
        "t.record({ ",
        fields.map((f) => `${propertyKey(f.name)}: ${item(f.body)}`),
        " })",
        indent,
      );
    }
    case "variant": {
      const { cases } = type.value;
      const payload = (p: SchemaType | undefined) => (p === undefined ? "null" : item(p));
      if (cases.some((c) => c.metadata !== undefined || isIntegerLike(c.name))) {
        const entries = cases.map((c) => `[${[JSON.stringify(c.name), payload(c.payload), ...optional(c.metadata)].join(", ")}]`);
        return layout("t.variantOf([", entries, "])", indent);
      }
      if (cases.length === 0) return "t.variant({})";
      return layout(
        "t.variant({ ",
        cases.map((c) => `${propertyKey(c.name)}: ${payload(c.payload)}`),
        " })",
        indent,
      );
    }
    case "enum":
      return `t.enum(${literal(type.value.cases)})`;
    case "flags":
      return `t.flags(${literal(type.value.flags)})`;
    case "tuple":
      return layout("t.tuple(", type.value.elements.map(item), ")", indent);
    case "list":
      return `t.list(${of(type.value.element)})`;
    case "fixed-list":
      return layout("t.fixedList(", [item(type.value.element), String(type.value.length)], ")", indent);
    case "map":
      return layout("t.map(", [item(type.value.key), item(type.value.value)], ")", indent);
    case "option":
      return `t.option(${of(type.value.inner)})`;
    case "stream":
      return `t.stream(${of(type.value.inner)})`;
    case "result": {
      const { ok, err } = type.value.spec;
      const members = [...(ok === undefined ? [] : [`ok: ${item(ok)}`]), ...(err === undefined ? [] : [`err: ${item(err)}`])];
      return members.length === 0 ? "t.result({})" : layout("t.result({ ", members, " })", indent);
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
        const members = [
          `tag: ${JSON.stringify(b.tag)}`,
          `body: ${typeSource(b.body, refName, inner + STEP)}`,
          `discriminator: ${literal(b.discriminator as JsonValue)}`,
        ];
        if (b.metadata !== undefined) members.push(`metadata: ${literal(b.metadata as JsonValue)}`);
        return layout("{ ", members, " }", inner);
      });
      return layout("t.union(", branches, ")", indent);
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

/**
 * Native value -> plain JavaScript data (the mapping table is in js.ts and
 * docs/protocol/schema-value.md). The value is validated first, so the walk
 * below only ever sees well-formed nodes of the expected types.
 */
import { encodeSchemaValue } from "./encode.js";
import { guard, validationError } from "./errors.js";
import { checkedType, type SchemaGraph } from "./graph.js";
import { Location } from "./location.js";
import { hooksOf } from "./options.js";
import { branchByTag } from "./lookup.js";
import { floatValue } from "./scalars.js";
import type { ResolvedType, SchemaType, SchemaValue, SchemaValueInput } from "./types.js";
import { decodeSchemaValue, plainStringText, type StreamLeaf } from "./value-decode.js";

/** Kinds whose JavaScript value is their payload as it is (the first case of the walk below). */
const IDENTITY_KINDS: ReadonlySet<string> = new Set(["bool", "s8", "s16", "s32", "u8", "u16", "u32", "char", "string"]);

export interface ToJsHooks {
  /** Turns a stream leaf into the JavaScript value the caller wants (an async iterable, say). */
  readonly stream?: (leaf: StreamLeaf) => unknown;
}

/** Validates `value` against `type` (default `graph.root`) and converts it to JavaScript data. */
export function toJs(value: SchemaValueInput, graph: SchemaGraph, type?: SchemaType, hooks: ToJsHooks = {}): unknown {
  hooks = hooksOf(hooks, "toJs");
  // A plain string node of a `string` type (each item of a `stream<string>` an agent reads) is its
  // own text: no closure, no decoded copy to make. Anything else, and anything wrong, goes through
  // the walk below, which decides and reports (test/plain-string.test.ts holds the two together).
  let text: string | undefined;
  try {
    text = plainStringText(value, graph, type);
  } catch {
    text = undefined;
  }
  if (text !== undefined) return text;
  return toJsWalk(value, graph, type, hooks);
}

/** `toJs` by the full walk (exported for the tests that hold the shortcut to it). */
export function toJsWalk(value: SchemaValueInput, graph: SchemaGraph, type?: SchemaType, hooks: ToJsHooks = {}): unknown {
  return guard("value", () => {
    const [checked, expected] = checkedType(graph, type);
    graph = checked;
    const decoded = decodeSchemaValue(value, graph, { type: expected, streams: "any" });
    // A scalar that is its own JavaScript value (most stream items): no walk to set up.
    if (IDENTITY_KINDS.has(decoded.value.kind)) return decoded.value.value;
    // Most values carry no stream: no map to look leaves up in.
    const leaves = decoded.streams.length === 0 ? undefined : new Map(decoded.streams.map((leaf) => [leaf.coordinate, leaf]));
    const location = new Location("value");
    const walk = (v: SchemaValue, declared: SchemaType): unknown => {
      const resolved = graph.resolve(declared);
      const into = (child: SchemaValue, childType: SchemaType, member: string, index?: number, subIndex?: number) => {
        const entered = location.enter(member, index, subIndex);
        const out = walk(child, childType);
        location.leave(entered);
        return out;
      };
      switch (v.kind) {
        case "bool":
        case "s8":
        case "s16":
        case "s32":
        case "u8":
        case "u16":
        case "u32":
        case "char":
        case "string":
          return v.value;
        case "s64":
        case "u64":
          return BigInt(v.value);
        case "f32":
        case "f64":
          return floatValue(v.value);
        case "record": {
          const fields = (resolved as Extract<ResolvedType, { kind: "record" }>).value.fields;
          const out: Record<string, unknown> = {};
          v.value.fields.forEach((field, i) => {
            const declaredField = fields[i] as { name: string; body: SchemaType };
            Object.defineProperty(out, declaredField.name, {
              value: into(field, declaredField.body, "fields", i),
              enumerable: true,
              writable: true,
              configurable: true,
            });
          });
          return out;
        }
        case "variant": {
          const declaredCase = (resolved as Extract<ResolvedType, { kind: "variant" }>).value.cases[v.value.case] as {
            name: string;
            payload?: SchemaType;
          };
          if (v.value.payload === undefined || declaredCase.payload === undefined) return { case: declaredCase.name };
          return { case: declaredCase.name, value: into(v.value.payload, declaredCase.payload, "payload") };
        }
        case "enum":
          return (resolved as Extract<ResolvedType, { kind: "enum" }>).value.cases[v.value.case];
        case "flags": {
          const names = (resolved as Extract<ResolvedType, { kind: "flags" }>).value.flags;
          return new Set(names.filter((_, i) => v.value.bits[i] === true));
        }
        case "tuple": {
          const elements = (resolved as Extract<ResolvedType, { kind: "tuple" }>).value.elements;
          return v.value.elements.map((e, i) => into(e, elements[i] as SchemaType, "elements", i));
        }
        case "list":
        case "fixed-list": {
          const element = (resolved as Extract<ResolvedType, { kind: "list" | "fixed-list" }>).value.element;
          return v.value.elements.map((e, i) => into(e, element, "elements", i));
        }
        case "map": {
          const m = (resolved as Extract<ResolvedType, { kind: "map" }>).value;
          const out = new Map<unknown, unknown>();
          // Keys are the same when their canonical texts are, as values are compared everywhere else:
          // two equal records are two JavaScript objects, but one key.
          const seen = new Set<string>();
          v.value.entries.forEach(([k, x], i) => {
            const at = `${location.path()}.entries[${i}][0]`;
            const canonical = encodeSchemaValue(k);
            // The native form allows repeated keys (Golem does not forbid
            // them); a Map would silently keep only the last one.
            if (seen.has(canonical)) throw validationError(at, "a repeated map key has no JavaScript Map form");
            seen.add(canonical);
            const key = into(k, m.key, "entries", i, 0);
            // Distinct keys that a Map still takes for one (it compares with SameValueZero): float 0 and -0.
            if (out.has(key)) throw validationError(at, "float keys 0 and -0 are distinct, but one JavaScript Map key");
            out.set(key, into(x, m.value, "entries", i, 1));
          });
          return out;
        }
        case "option": {
          const inner = (resolved as Extract<ResolvedType, { kind: "option" }>).value.inner;
          if (v.value.inner === null) return undefined;
          const converted = into(v.value.inner, inner, "inner");
          return graph.resolve(inner).kind === "option" ? { some: converted } : converted;
        }
        case "result": {
          const spec = (resolved as Extract<ResolvedType, { kind: "result" }>).value.spec;
          const side = spec[v.value.tag];
          const converted = v.value.value === null || side === undefined ? undefined : into(v.value.value, side, "value");
          return v.value.tag === "ok" ? { ok: converted } : { err: converted };
        }
        case "text":
          return v.value.language === undefined ? { text: v.value.text } : { text: v.value.text, language: v.value.language };
        case "binary": {
          const bytes = Uint8Array.from(v.value.bytes);
          return v.value.mimeType === undefined ? bytes : { bytes, mimeType: v.value.mimeType };
        }
        case "path":
          return v.value.path;
        case "url":
          return v.value.url;
        case "datetime":
          return v.value.value;
        case "duration":
          return BigInt(v.value.nanoseconds);
        case "quantity":
          return { mantissa: BigInt(v.value.mantissa), scale: v.value.scale, unit: v.value.unit };
        case "union": {
          const branch = branchByTag((resolved as Extract<ResolvedType, { kind: "union" }>).value.spec.branches, v.value.tag);
          return { tag: v.value.tag, body: into(v.value.body, (branch as { body: SchemaType }).body, "body") };
        }
        case "stream": {
          const leaf = leaves?.get(location.pointer()) as StreamLeaf;
          return hooks.stream === undefined ? { ...v.value } : hooks.stream(leaf);
        }
      }
    };
    return walk(decoded.value, expected);
  });
}

/**
 * Union discriminators (decisions-v1 section 1), evaluated on a decoded
 * body. The graph already guaranteed that each rule applies to its branch
 * body (string-like for text rules, a record declaring or not declaring the
 * field for field rules), so here only the value is looked at.
 */
import type { SchemaGraph } from "./graph.js";
import { fieldIndex } from "./lookup.js";
import type { SchemaValue, UnionBranch } from "./types.js";

export function discriminatorHolds(graph: SchemaGraph, branch: UnionBranch, body: SchemaValue): boolean {
  const d = branch.discriminator;
  switch (d.rule) {
    case "prefix":
    case "suffix":
    case "contains":
    case "regex": {
      const text = stringView(body);
      if (text === undefined) return false;
      if (d.rule === "prefix") return text.startsWith(d.value.prefix);
      if (d.rule === "suffix") return text.endsWith(d.value.suffix);
      if (d.rule === "contains") return text.includes(d.value.substring);
      return graph.regex(d.value.regex).test(text);
    }
    case "field-equals": {
      const declared = graph.resolve(branch.body);
      if (declared.kind !== "record" || body.kind !== "record") return false;
      const index = fieldIndex(declared.value.fields, d.value.fieldName);
      if (index < 0) return false;
      if (d.value.literal === undefined) return true;
      const field = body.value.fields[index];
      return field !== undefined && stringView(field) === d.value.literal;
    }
    case "field-absent":
      return body.kind === "record";
  }
}

/** The text a prefix/suffix/contains/regex rule or a field literal looks at. */
function stringView(value: SchemaValue): string | undefined {
  switch (value.kind) {
    case "string":
      return value.value;
    case "text":
      return value.value.text;
    case "url":
      return value.value.url;
    case "path":
      return value.value.path;
    default:
      return undefined;
  }
}

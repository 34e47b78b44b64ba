/**
 * What a value that is not JSON should have been. `argument 1 (n) is not valid JSON` left a
 * person guessing whether the CLI wanted `3`, `"3"` or `{"n":3}`; the message now names the type
 * as `golem-stream types` prints it and gives an example the schema takes, built with the text
 * the person typed where a string goes: `kg` for a `record{unit: string}` becomes
 * `{"unit":"kg"}`, and bare `p/` for an `option<string>` (whose JSON is a string, but which takes
 * `null` too, so bare text is not taken as the string) the JSON string `"p/"`.
 */
import type { SchemaGraph, SchemaType } from "@golem-stream/schema-value";
import { ProtocolError } from "@golem-stream/wire";
import type { JsonValue } from "@golem-stream/wire";
import { shellWord } from "./io/shell-word.js";
import { plainToNative } from "./plain-json.js";
import { articled, typeText } from "./type-text.js";

/** How an example is shown: a word to type at a shell (an argument, `--constructor`), or a line of input as it is. */
export type ExampleQuoting = "shell" | "line";

/** The longest type signature shown; a longer one ends in `…`. */
const MAX_SIGNATURE_LENGTH = 200;
/** The longest example shown, as JSON text: a longer one says less than the type. */
const MAX_EXAMPLE_LENGTH = 100;
/** The longest text of the person's that an example repeats; a longer one is replaced by `text`. */
const MAX_ECHOED_TEXT = 40;
/** How deep an example is built: deeper types get none. */
const MAX_DEPTH = 4;

/**
 * `error` (`<what> is not valid JSON`, from parsing `text`) saying what `type` expects, and
 * `is empty` for a value or line with nothing in it.
 */
export function notJsonError(
  error: ProtocolError,
  text: string,
  graph: SchemaGraph,
  type: SchemaType,
  what: string,
  quoting: ExampleQuoting,
): ProtocolError {
  // A catalogue may declare a type of thousands of fields or cases: its signature is cut short.
  const signature = typeText(graph, type);
  const expected = `expected ${articled(signature.length > MAX_SIGNATURE_LENGTH ? `${signature.slice(0, MAX_SIGNATURE_LENGTH)}…` : signature)}`;
  const example = exampleOf(graph, type, text);
  let hint = expected;
  if (example !== undefined) {
    const json = JSON.stringify(example);
    const shown = quoting === "shell" ? shellWord(json) : json;
    hint = typeof example === "string" ? `${expected}; give a JSON string: ${shown}` : `${expected}, e.g. ${shown}`;
  }
  const problem = text.trim() === "" ? "is empty" : "is not valid JSON";
  return new ProtocolError(error.code, `${what} ${problem}: ${hint}`, {
    cause: error,
    ...(error.path === undefined ? {} : { path: error.path }),
  });
}

/** A plain-JSON value of `type` that the schema takes, or undefined when none is found short enough. */
function exampleOf(graph: SchemaGraph, type: SchemaType, typed: string): JsonValue | undefined {
  const trimmed = typed.trim();
  // Text of the person's is echoed where it reads as a value meant for a string: short, on one
  // line, and no attempt at JSON of its own (`{unit:"kg"}` is a record mistyped, not a unit).
  const echoed = trimmed !== "" && trimmed.length <= MAX_ECHOED_TEXT && !/[\p{Cc}{}[\]"]/u.test(trimmed) ? trimmed : undefined;
  const example = build(graph, type, echoed, 0);
  if (example === undefined || JSON.stringify(example).length > MAX_EXAMPLE_LENGTH) return undefined;
  try {
    plainToNative(example, graph, type);
  } catch {
    // A restriction this guess does not meet (a range, a pattern): better no example than a wrong one.
    return undefined;
  }
  return example;
}

function build(graph: SchemaGraph, type: SchemaType, echoed: string | undefined, depth: number): JsonValue | undefined {
  if (depth > MAX_DEPTH) return undefined;
  const resolved = graph.resolve(type);
  const inner = (member: SchemaType) => build(graph, member, echoed, depth + 1);
  const all = (members: readonly SchemaType[]): JsonValue[] | undefined => {
    const values = members.map(inner);
    return values.every((value) => value !== undefined) ? (values as JsonValue[]) : undefined;
  };
  switch (resolved.kind) {
    case "bool":
      return true;
    case "s8":
    case "s16":
    case "s32":
    case "s64":
    case "u8":
    case "u16":
    case "u32":
    case "u64":
    case "duration":
      return 3;
    case "f32":
    case "f64":
      return 1.5;
    case "char":
      return echoed !== undefined && [...echoed].length === 1 ? echoed : "a";
    case "string":
    case "text":
    case "path":
      return echoed ?? "text";
    case "url":
      return "https://example.com/";
    case "datetime":
      return "2030-01-02T03:04:05Z";
    case "binary":
      return "aGVsbG8=";
    case "enum":
      return echoed !== undefined && resolved.value.cases.includes(echoed) ? echoed : resolved.value.cases[0];
    case "flags":
      return resolved.value.flags.slice(0, 1);
    case "record": {
      const values = all(resolved.value.fields.map((field) => field.body));
      return values && Object.fromEntries(resolved.value.fields.map((field, i) => [field.name, values[i] as JsonValue]));
    }
    case "tuple":
      return all(resolved.value.elements);
    case "list":
    case "fixed-list": {
      const element = inner(resolved.value.element);
      return element === undefined ? undefined : [element];
    }
    case "map": {
      const pair = all([resolved.value.key, resolved.value.value]);
      return pair && [pair];
    }
    case "option": {
      const value = inner(resolved.value.inner);
      // A nested option's value is written {some: value}: plain JSON's null would be ambiguous.
      return value !== undefined && graph.resolve(resolved.value.inner).kind === "option" ? { some: value } : value;
    }
    case "result": {
      const { ok, err } = resolved.value.spec;
      if (ok === undefined && err === undefined) return { ok: null };
      const side = ok === undefined ? "err" : "ok";
      const value = inner((ok ?? err) as SchemaType);
      return value === undefined ? undefined : { [side]: value };
    }
    case "variant": {
      const first = resolved.value.cases[0];
      if (first === undefined) return undefined;
      if (first.payload === undefined) return { case: first.name };
      const value = inner(first.payload);
      return value === undefined ? undefined : { case: first.name, value };
    }
    default:
      return undefined;
  }
}

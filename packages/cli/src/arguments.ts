/**
 * Turns `invoke`'s command-line arguments into native values: one argument
 * per method parameter, in declaration order; `-` binds stdin to a stream
 * parameter, any other argument of one names a file to read. Every failure
 * is a usage error naming the argument, raised before anything is sent.
 */
import { inputStream } from "@golem-stream/client";
import type { InputStream, ParamNode, ParamPayload } from "@golem-stream/client";
import { decodeSchemaValue, isDirectBinary } from "@golem-stream/schema-value";
import type { SchemaGraph, SchemaType, SchemaValue } from "@golem-stream/schema-value";
import { LIMITS, isProtocolError, parseStrictJson } from "@golem-stream/wire";
import type { JsonValue, SchemaValueJson } from "@golem-stream/wire";
import type { CliIo } from "./io/cli-io.js";
import { byteChunks, readAllBounded, thenDone } from "./io/stdin-source.js";
import { fileSource, stdinSource } from "./io/input-source.js";
import type { InputSource } from "./io/input-source.js";
import { textLines } from "./io/stdin-lines.js";
import { JSON_VALUE_LINE, STRING_ITEM_LINE } from "./io/line-limits.js";
import type { StreamProgress, StreamProgressOptions } from "./io/progress.js";
import { usageError } from "./exit-codes.js";
import type { InputFormat } from "./options.js";
import { plainToNative } from "./plain-json.js";
import { articled, describeType } from "./type-text.js";
import { notJsonError, type ExampleQuoting } from "./value-hint.js";

/** Types whose plain-JSON argument may be written without JSON quotes. */
const STRING_LIKE = new Set(["string", "char", "text", "path", "url", "enum", "datetime"]);

export interface ArgumentOptions {
  /** Arguments are native SchemaValue JSON instead of plain JSON. */
  readonly native: boolean;
  /** How the lines of a stream's input are read (`--input`); `auto` when absent. */
  readonly input?: InputFormat;
}

/** A record's fields, or a usage error: parameters and constructors are records. */
function recordFields(graph: SchemaGraph, what: string): { name: string; body: SchemaType }[] {
  const root = graph.resolve(graph.root);
  if (root.kind !== "record") throw usageError(`${what} is not a record of parameters; use --native`);
  return root.value.fields;
}

export function signatureText(graph: SchemaGraph): string {
  const fields = recordFields(graph, "the signature");
  return fields.map((f) => `${f.name}: ${describeType(graph, f.body)}`).join(", ");
}

/**
 * One value argument (not `-`), or one line of a stream's input: strict JSON, converted and
 * validated against `type`; text that is not JSON is told what the type expects, with an example
 * quoted as `quoting` says.
 */
export function parseValueArgument(
  text: string,
  graph: SchemaGraph,
  type: SchemaType,
  what: string,
  options: ArgumentOptions,
  quoting: ExampleQuoting = "shell",
): SchemaValue {
  try {
    if (options.native) {
      const json = parseStrictJson(text, { what });
      return decodeSchemaValue(json, graph, { type, streams: "forbidden", path: what }).value;
    }
    return plainToNative(plainJsonOf(text, graph, type, what, quoting), graph, type, what);
  } catch (error) {
    if (isProtocolError(error)) throw usageError(about(what, error.message), error);
    throw error;
  }
}

/** `what: message`, unless the message already starts by naming `what` (no "--constructor: --constructor ..."). */
function about(what: string, message: string): string {
  return message.startsWith(what) ? message : `${what}: ${message}`;
}

/** A float's values that JSON has no number for: plain JSON writes them as strings, and a float parameter takes them bare too. */
const NON_FINITE = new Set(["NaN", "Infinity", "-Infinity"]);

const INTEGER = /^-?(?:0|[1-9][0-9]*)$/;

/** A decimal as JavaScript reads it, the forms JSON refuses included: no digits before or after the point, leading zeros. */
const SHELL_DECIMAL = /^-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;

/** Plain JSON of an argument; a string-like parameter also takes its text verbatim. */
function plainJsonOf(text: string, graph: SchemaGraph, type: SchemaType, what: string, quoting: ExampleQuoting): JsonValue {
  const kind = graph.resolve(type).kind;
  if ((kind === "f32" || kind === "f64") && NON_FINITE.has(text)) return text;
  // Digits as typed: read as a JSON number, one past 2^53 would lose its last digits first.
  if ((kind === "s64" || kind === "u64" || kind === "duration") && INTEGER.test(text)) return text;
  const stringLike = STRING_LIKE.has(kind);
  let json: JsonValue;
  try {
    json = parseStrictJson(text, { what });
  } catch (error) {
    if (stringLike) return text;
    // What a person types at a shell for a fraction and JSON has no spelling for (`.5`, `-.5`, `2.`).
    if ((kind === "f32" || kind === "f64") && SHELL_DECIMAL.test(text) && Number.isFinite(Number(text))) return Number(text);
    // Not JSON at all (JSON.parse's SyntaxError), rather than past a bound: say what would be.
    if (isProtocolError(error) && error.cause instanceof SyntaxError) throw notJsonError(error, text, graph, type, what, quoting);
    throw error;
  }
  return stringLike && typeof json !== "string" ? text : json;
}

/** Constructor parameters from `--constructor`: an object by field name, an array in order, or native. */
export function constructorValue(text: string | undefined, graph: SchemaGraph, options: ArgumentOptions): SchemaValue {
  if (text === undefined) {
    const fields = options.native ? [] : recordFields(graph, "the constructor");
    if (fields.length > 0) {
      throw usageError(`this agent type needs --constructor with ${signatureText(graph)}, e.g. -c '{"${fields[0]!.name}":...}'`);
    }
    return { kind: "record", value: { fields: [] } };
  }
  if (!options.native) {
    const fields = recordFields(graph, "the constructor");
    try {
      // Text that is not JSON: parseValueArgument below says so, and what the constructor takes.
      const json = parseStrictJson(text, { what: "--constructor" });
      if (Array.isArray(json) && json.length === fields.length) {
        const byName = Object.fromEntries(fields.map((f, i) => [f.name, json[i] as JsonValue]));
        return plainToNative(byName, graph, graph.root, "--constructor");
      }
    } catch (error) {
      const notJson = isProtocolError(error) && error.cause instanceof SyntaxError;
      if (isProtocolError(error) && !notJson) throw usageError(about("--constructor", error.message), error);
      if (!notJson) throw error;
    }
  }
  return parseValueArgument(text, graph, graph.root, "--constructor", options);
}

export interface BoundParameters {
  readonly methodParameters: ParamNode;
  /** Each input stream this process feeds, with the parameter it is for and where its bytes come from. */
  readonly inputs: ReadonlyMap<InputStream, InputSource>;
}

/**
 * Builds the method parameters. A stream parameter takes `-` (stdin, for one of them) or a file
 * to read; the items are cut by its element type (see docs/protocol/cli.md).
 */
export function bindMethodParameters(
  args: readonly string[],
  graph: SchemaGraph,
  io: CliIo,
  options: ArgumentOptions,
  inputProgress: (name: string, options: StreamProgressOptions) => StreamProgress,
): BoundParameters {
  const fields = recordFields(graph, "the method's parameters");
  if (args.length !== fields.length) {
    throw usageError(
      `expected ${fields.length} argument${fields.length === 1 ? "" : "s"} (${signatureText(graph) || "none"}), got ${args.length}`,
    );
  }
  const inputs = new Map<InputStream, InputSource>();
  let stdinParameter: string | undefined;
  const values = fields.map((field, index): ParamPayload => {
    const arg = args[index] as string;
    const what = `argument ${index + 1} (${field.name})`;
    const resolved = graph.resolve(field.body);
    if (resolved.kind === "stream") {
      if (arg === "-" && stdinParameter !== undefined) {
        throw usageError(`stdin is already bound to ${stdinParameter}; only one - is possible: give ${field.name} a file to read`);
      }
      if (arg === "-") stdinParameter = field.name;
      const source =
        arg === "-"
          ? stdinSource(io.stdin, field.name)
          : fileSource(arg, field.name, `${what} is ${articled(describeType(graph, field.body))}`);
      const direct = isDirectBinary(graph, resolved.value.inner);
      const bar = inputProgress(field.name, {
        unit: direct === "u8" ? "bytes" : "items",
        ...(source.totalBytes === undefined ? {} : { totalBytes: source.totalBytes }),
      });
      const stream = inputItems(graph, resolved.value.inner, source, options, bar);
      inputs.set(stream, source);
      return stream;
    }
    if (arg === "-")
      throw usageError(`${what} is ${articled(describeType(graph, field.body))}, not a stream; - binds stdin to stream parameters only`);
    return parseValueArgument(arg, graph, field.body, what, options) as unknown as ParamPayload;
  });
  return { methodParameters: { kind: "record", value: { fields: values } }, inputs };
}

function inputItems(
  graph: SchemaGraph,
  elementType: SchemaType,
  source: InputSource,
  options: ArgumentOptions,
  bar: StreamProgress,
): InputStream {
  const direct = isDirectBinary(graph, elementType);
  const done = () => bar.finish("done");
  const counted = (lines: number, bytes: number) => bar.add(lines, bytes);
  if (direct === "u8")
    return inputStream.bytes(
      thenDone(
        byteChunks(source.bytes, (bytes) => bar.add(bytes, bytes)),
        done,
      ),
    );
  if (direct === "binary") {
    return inputStream.binary(
      (async function* () {
        const bytes = await readAllBounded(source.bytes, LIMITS.maxBinaryPayloadBytes, `${source.name} for ${source.parameter}`);
        bar.add(1, bytes.length);
        yield bytes;
        done();
      })(),
    );
  }
  const strings = graph.resolve(elementType).kind === "string";
  if (strings && options.input !== "json") {
    return inputStream.strings(textLines(source.bytes, counted, STRING_ITEM_LINE, done, source.name));
  }
  // Any other element type, or every one with --input json: one JSON value per line, converted like an argument.
  let line = 0;
  return inputStream.values(textLines(source.bytes, counted, JSON_VALUE_LINE, done, source.name), (text: string): ParamNode => {
    line += 1;
    const what = `${source.name} line ${line}`;
    if (strings && !options.native) return { kind: "string", value: jsonStringLine(text, what) } as unknown as ParamNode;
    return parseValueArgument(text, graph, elementType, what, options, "line") as unknown as ParamNode;
  });
}

/**
 * A line of a `stream<string>` under `--input json`: a JSON string and nothing else. Bare text is
 * refused rather than taken as it is (as an argument's would be), since a line that only looks
 * like JSON would otherwise go up with its quotes and escapes unread.
 */
function jsonStringLine(text: string, what: string): string {
  let json: JsonValue | undefined;
  try {
    json = parseStrictJson(text, { what });
  } catch (error) {
    if (!isProtocolError(error) || !(error.cause instanceof SyntaxError))
      throw usageError(error instanceof Error ? error.message : String(error), error);
  }
  if (typeof json === "string") return json;
  throw usageError(
    `${what} is not a JSON string: with --input json, each line of a stream<string> is one, e.g. ${JSON.stringify(text.length > 40 ? "text" : text)}`,
  );
}

export function nativeAsJson(value: SchemaValue): SchemaValueJson {
  return value as unknown as SchemaValueJson;
}

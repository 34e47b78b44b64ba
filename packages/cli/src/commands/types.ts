/**
 * `golem-stream types`: what can be invoked, from the discovery endpoint.
 */
import type { SchemaGraph, SchemaType } from "@golem-stream/schema-value";
import { canonicalJson } from "@golem-stream/wire";
import { describeType } from "../arguments.js";
import { resolveConnection } from "../connection.js";
import { fetchCatalogue } from "../discovery.js";
import type { Catalogue } from "../discovery.js";
import { EXIT } from "../exit-codes.js";
import type { ExitCode } from "../exit-codes.js";
import type { CliIo } from "../io/cli-io.js";
import { printable } from "../io/printable.js";
import type { TypesOptions } from "../options.js";

export async function runTypes(options: TypesOptions, io: CliIo): Promise<ExitCode> {
  const connection = resolveConnection(options, io.env);
  const catalogue = await fetchCatalogue(connection, options.application, options.environment, io.signal, options.maxCatalogueBytes);
  if (options.json) {
    const document = {
      application: catalogue.application,
      environment: catalogue.environment,
      agentTypes: catalogue.agentTypes.map((t) => t.json),
    };
    // The server's catalogue, which may pass the 8 MiB a protocol message may hold: no bound of ours.
    io.stdout.write(`${canonicalJson(document, { maxBytes: Number.MAX_SAFE_INTEGER })}\n`);
  } else {
    io.stdout.write(formatCatalogue(catalogue));
  }
  return EXIT.success;
}

export function formatCatalogue(catalogue: Catalogue): string {
  const lines = [`${catalogue.application}/${catalogue.environment}`];
  if (catalogue.agentTypes.length === 0) lines.push("  (no agent types)");
  for (const agentType of catalogue.agentTypes) {
    lines.push(`  ${agentType.name}(${parameterList(agentType.constructorParameters)})`);
    for (const method of agentType.methods) {
      const result = method.result === undefined ? "" : ` -> ${typeText(method.result, method.result.root, 0)}`;
      lines.push(`    ${method.name}(${parameterList(method.parameters)})${result}`);
    }
  }
  // Every name here is the server's: its control characters must not reach the terminal.
  return `${lines.map(printable).join("\n")}\n`;
}

function parameterList(graph: SchemaGraph): string {
  const root = graph.resolve(graph.root);
  if (root.kind !== "record") return typeText(graph, graph.root, 0);
  return root.value.fields.map((f) => `${f.name}: ${typeText(graph, f.body, 0)}`).join(", ");
}

/**
 * A compact type signature. What a caller must spell in an argument is shown a few levels deep:
 * a record's fields, a variant's cases with their payloads (a case without one is its bare
 * name), an enum's cases and flags' names by name, a tuple's elements by position, a result's
 * `ok` and `err` (the plain JSON names them so).
 */
function typeText(graph: SchemaGraph, type: SchemaType, depth: number): string {
  const resolved = graph.resolve(type);
  if (depth > 3) return resolved.kind;
  const inner = (member: SchemaType) => typeText(graph, member, depth + 1);
  switch (resolved.kind) {
    case "record":
      return `record{${resolved.value.fields.map((f) => `${f.name}: ${inner(f.body)}`).join(", ")}}`;
    case "variant":
      return `variant{${resolved.value.cases.map((c) => (c.payload === undefined ? c.name : `${c.name}: ${inner(c.payload)}`)).join(", ")}}`;
    case "enum":
      return `enum{${resolved.value.cases.join(", ")}}`;
    case "flags":
      return `flags{${resolved.value.flags.join(", ")}}`;
    case "tuple":
      return `tuple<${resolved.value.elements.map(inner).join(", ")}>`;
    case "map":
      return `map<${inner(resolved.value.key)}, ${inner(resolved.value.value)}>`;
    case "result": {
      const { ok, err } = resolved.value.spec;
      const branches = [...(ok === undefined ? [] : [`ok: ${inner(ok)}`]), ...(err === undefined ? [] : [`err: ${inner(err)}`])];
      return `result{${branches.join(", ")}}`;
    }
    case "stream":
      return `stream<${inner(resolved.value.inner)}>`;
    case "list":
    case "fixed-list":
      return `list<${inner(resolved.value.element)}>`;
    case "option":
      return `option<${inner(resolved.value.inner)}>`;
    default:
      return describeType(graph, type);
  }
}

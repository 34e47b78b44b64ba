/**
 * `golem-stream types`: what can be invoked, from the discovery endpoint.
 */
import type { SchemaGraph } from "@golem-stream/schema-value";
import { canonicalJson } from "@golem-stream/wire";
import { resolveConnection } from "../connection.js";
import { fetchCatalogue } from "../discovery.js";
import type { Catalogue } from "../discovery.js";
import { EXIT } from "../exit-codes.js";
import type { ExitCode } from "../exit-codes.js";
import type { CliIo } from "../io/cli-io.js";
import { printable } from "../io/printable.js";
import type { TypesOptions } from "../options.js";
import { typeText } from "../type-text.js";

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
      const result = method.result === undefined ? "" : ` -> ${typeText(method.result, method.result.root)}`;
      lines.push(`    ${method.name}(${parameterList(method.parameters)})${result}`);
    }
  }
  // Every name here is the server's: its control characters must not reach the terminal.
  return `${lines.map(printable).join("\n")}\n`;
}

function parameterList(graph: SchemaGraph): string {
  const root = graph.resolve(graph.root);
  if (root.kind !== "record") return typeText(graph, graph.root);
  return root.value.fields.map((f) => `${f.name}: ${typeText(graph, f.body)}`).join(", ");
}

/**
 * `golem-stream token inspect`: shows what a gai1_ token says about itself.
 * Token payloads are authenticated but not encrypted (protocol 10.1), so
 * anyone can read them; only the server's keyring can tell whether they are
 * genuine. The output says so, every time.
 */
import { inspectToken, isInvalidTokenError } from "@golem-stream/tokens";
import type { InspectedToken } from "@golem-stream/tokens";
import { LIMITS, canonicalJson } from "@golem-stream/wire";
import type { JsonObject } from "@golem-stream/wire";
import { EXIT, usageError } from "../exit-codes.js";
import type { ExitCode } from "../exit-codes.js";
import type { CliIo } from "../io/cli-io.js";
import { printable } from "../io/printable.js";
import { readAllBounded } from "../io/stdin-source.js";

export async function runTokenInspect(value: string, options: { json: boolean }, io: CliIo): Promise<ExitCode> {
  const token =
    value === "-" ? new TextDecoder().decode(await readAllBounded(io.stdin, LIMITS.maxTokenBytes + 2, "the token on stdin")).trim() : value;
  let inspected: InspectedToken;
  try {
    inspected = inspectToken(token);
  } catch (error) {
    if (isInvalidTokenError(error)) throw usageError(`not a well-formed gai1_ token (${error.reason})`, error);
    throw error;
  }
  const document = inspectionJson(inspected);
  if (options.json) {
    io.stdout.write(`${canonicalJson(document)}\n`);
  } else {
    io.stdout.write(formatInspection(document));
  }
  return EXIT.success;
}

/** The inspection as JSON: u64 fields become decimal strings (JSON numbers cannot hold them exactly). */
export function inspectionJson(inspected: InspectedToken): JsonObject {
  const fields: JsonObject = {};
  for (const [name, field] of Object.entries(inspected.fields)) {
    if (field === undefined) continue;
    fields[name] = typeof field === "bigint" ? field.toString() : (field as string);
  }
  return { kind: inspected.kind, keyId: inspected.keyId, signatureVerified: false, fields };
}

function formatInspection(document: JsonObject): string {
  const fields = document["fields"] as JsonObject;
  const rows: [string, string][] = [
    ["kind", String(document["kind"])],
    ["key id", String(document["keyId"])],
    ...Object.entries(fields).map(([name, value]): [string, string] => [name, describe(name, String(value))]),
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  // Whoever wrote the token chose its fields: their control characters are shown escaped, not run.
  const lines = rows.map(([name, value]) => printable(`${name.padEnd(width)}  ${value}`));
  lines.push("", "NOT VERIFIED: the signature was not checked; anyone can write a token that decodes like this.");
  return `${lines.join("\n")}\n`;
}

function describe(name: string, value: string): string {
  if (name === "issuedAt" && /^[0-9]{1,15}$/.test(value)) {
    const date = new Date(Number(value));
    if (!Number.isNaN(date.getTime())) return `${value} (${date.toISOString()})`;
  }
  return value;
}

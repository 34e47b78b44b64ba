/**
 * The server's discovery endpoint, `GET /v1/agents/types?application=&environment=`:
 * which agent types and methods exist and their schemas. `invoke` needs it to
 * convert plain JSON arguments and to know what `-` binds stdin to; `types`
 * prints it.
 *
 * The response is hostile input like any other: bounded before it is read,
 * strictly parsed, and every graph validated. Members this CLI does not use
 * are ignored, so the endpoint can grow without breaking older CLIs.
 */
import { decodeSchemaGraph } from "@golem-stream/schema-value";
import type { SchemaGraph } from "@golem-stream/schema-value";
import { MiB, ProtocolError, canonicalJson, getMember, isJsonObject, parseStrictJson } from "@golem-stream/wire";
import type { JsonObject, JsonValue } from "@golem-stream/wire";
import { createHash } from "node:crypto";
import type { Connection } from "./connection.js";
import { CliError, EXIT, usageError } from "./exit-codes.js";
import { ResponseTooLarge, httpGet } from "./http-get.js";
import { DEFAULT_MAX_CATALOGUE_BYTES, MAX_CATALOGUE_BYTES_OPTION } from "./options.js";
import { SELECTOR_HINT } from "./catalogue-selector.js";
import type { HttpResponse } from "./http-get.js";
import { plainHttpRefusal, tlsFailure } from "./tls-failure.js";

export const DISCOVERY_PATH = "/v1/agents/types";

export interface MethodSignature {
  readonly name: string;
  readonly parameters: SchemaGraph;
  /** Undefined for a method without a result. */
  readonly result: SchemaGraph | undefined;
  /** The JSON the server sent, kept for `types --json` and the checkpoint's schema digest. */
  readonly json: JsonObject;
}

export interface AgentTypeSignature {
  readonly name: string;
  readonly constructorParameters: SchemaGraph;
  readonly methods: readonly MethodSignature[];
  /** The configuration entries the agent type declares (`[]` when the server lists none). */
  readonly config: readonly { readonly path: readonly string[] }[];
  readonly json: JsonObject;
}

export interface Catalogue {
  readonly application: string;
  readonly environment: string;
  readonly agentTypes: readonly AgentTypeSignature[];
}

export async function fetchCatalogue(
  connection: Connection,
  application: string,
  environment: string,
  signal: AbortSignal,
  maxBytes: number,
): Promise<Catalogue> {
  const url = new URL(DISCOVERY_PATH, connection.httpOrigin);
  url.searchParams.set("application", application);
  url.searchParams.set("environment", environment);
  let response: HttpResponse;
  try {
    response = await httpGet(url, { authorization: `Bearer ${connection.token}` }, signal, maxBytes);
  } catch (cause) {
    if (cause instanceof ResponseTooLarge) throw catalogueTooLarge(cause, { application, environment });
    throw new CliError(EXIT.connectionLost, `cannot reach ${connection.httpOrigin}: ${describeConnectionError(cause, signal)}`, {
      cause,
      retryable: isTransient(cause, signal),
    });
  }
  if (response.status < 200 || response.status > 299) throw httpFailure(response, { application, environment }, url);
  try {
    return { application, environment, agentTypes: decodeCatalogue(response.body, maxBytes) };
  } catch (cause) {
    if (!(cause instanceof ProtocolError)) throw cause;
    throw invalidDocument(cause);
  }
}

/** A document this CLI cannot read is the server breaking the protocol, not a bug here. */
function invalidDocument(cause: ProtocolError): CliError {
  return new CliError(EXIT.connectionLost, `the server's discovery document is not valid: ${cause.message}`, { code: cause.code, cause });
}

/**
 * A catalogue past `--max-catalogue-bytes`: not the server's fault (a catalogue has no size
 * limit) but this command's bound, so the message names the flag that raises it, and a size that
 * would do when the server declared one. Exit 4 as before, when it was called invalid; never
 * retried, as asking again brings the same catalogue.
 */
function catalogueTooLarge(
  { maxBytes, declared }: ResponseTooLarge,
  asked: { readonly application: string; readonly environment: string },
): CliError {
  const which = `application ${JSON.stringify(asked.application)}, environment ${JSON.stringify(asked.environment)}`;
  const size = declared === undefined ? "" : `; the server declares ${declared} bytes`;
  const limit = `${MAX_CATALOGUE_BYTES_OPTION / MiB}MiB`;
  const raise =
    declared === undefined
      ? `run the command again with a larger --max-catalogue-bytes (at most ${limit})`
      : declared > MAX_CATALOGUE_BYTES_OPTION
        ? `more than the CLI can read (--max-catalogue-bytes is at most ${limit})`
        : `run the command again with --max-catalogue-bytes ${Math.ceil(declared / MiB)}MiB`;
  return new CliError(
    EXIT.connectionLost,
    `the catalogue of ${which} is larger than --max-catalogue-bytes (${byteSize(maxBytes)}${size}): ${raise}`,
    { code: "limit-exceeded" },
  );
}

/** A size as `--max-catalogue-bytes` takes it: whole MiB or KiB by their unit, bytes bare. */
function byteSize(bytes: number): string {
  if (bytes % MiB === 0) return `${bytes / MiB}MiB`;
  return bytes % 1024 === 0 ? `${bytes / 1024}KiB` : `${bytes} bytes`;
}

/** Decodes a discovery document of at most `maxBytes`. Throws only `ProtocolError`. */
export function decodeCatalogue(body: Uint8Array | string, maxBytes = DEFAULT_MAX_CATALOGUE_BYTES): AgentTypeSignature[] {
  const root = parseStrictJson(body, { maxBytes, what: "discovery response" });
  const agentTypes = member(root, "agentTypes", "discovery");
  if (!Array.isArray(agentTypes)) throw malformed("discovery.agentTypes", "must be an array");
  return agentTypes.map((agentType, i) => {
    const at = `discovery.agentTypes[${i}]`;
    if (!isJsonObject(agentType)) throw malformed(at, "must be an object");
    const methods = member(agentType, "methods", at);
    if (!Array.isArray(methods)) throw malformed(`${at}.methods`, "must be an array");
    return {
      name: text(member(agentType, "name", at), `${at}.name`),
      constructorParameters: graph(member(agentType, "constructorParameters", at), `${at}.constructorParameters`, "forbidden"),
      methods: methods.map((method, j) => {
        const mt = `${at}.methods[${j}]`;
        if (!isJsonObject(method)) throw malformed(mt, "must be an object");
        const result = getMember(method, "result");
        return {
          name: text(member(method, "name", mt), `${mt}.name`),
          parameters: graph(member(method, "parameters", mt), `${mt}.parameters`, "allowed"),
          result: result === undefined || result === null ? undefined : graph(result, `${mt}.result`, "allowed"),
          json: method,
        };
      }),
      config: configEntries(getMember(agentType, "config"), `${at}.config`),
      json: agentType,
    };
  });
}

/** `config` is optional (older servers omit it); when present, a list of `{path: [string…]}`. */
function configEntries(value: JsonValue | undefined, at: string): { path: string[] }[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw malformed(at, "must be an array");
  return value.map((entry, i) => {
    const path = isJsonObject(entry) ? getMember(entry, "path") : undefined;
    if (!Array.isArray(path) || path.some((part) => typeof part !== "string"))
      throw malformed(`${at}[${i}].path`, "must be an array of strings");
    return { path: path as string[] };
  });
}

/**
 * Evidence of the schema arguments were encoded against (checkpoint
 * `schema.methodDigest`): SHA-256 of the canonical JSON of the constructor,
 * parameter and result graphs and the method name.
 */
export function methodSchemaDigest(agentType: AgentTypeSignature, method: MethodSignature): string {
  const evidence: JsonObject = {
    constructor: agentType.constructorParameters.toJSON() as JsonValue,
    method: method.name,
    parameters: method.parameters.toJSON() as JsonValue,
  };
  if (method.result !== undefined) evidence["result"] = method.result.toJSON() as JsonValue;
  return createHash("sha256").update(canonicalJson(evidence)).digest("hex");
}

/**
 * The agent type and method a command names in `catalogue`; a usage error naming what exists
 * otherwise, an unknown agent type with `typesCommand`, the command that lists the catalogue
 * (catalogue-selector.ts).
 */
export function findMethod(
  catalogue: Catalogue,
  agentTypeName: string,
  methodName: string,
  typesCommand = "golem-stream types",
): { agentType: AgentTypeSignature; method: MethodSignature } {
  const agentType = catalogue.agentTypes.find((t) => t.name === agentTypeName);
  const where = `${catalogue.application}/${catalogue.environment}`;
  if (agentType === undefined) {
    const known = catalogue.agentTypes.map((t) => t.name).join(", ") || "none";
    throw usageError(`no agent type "${agentTypeName}" in ${where} (known: ${known}); see ${typesCommand}`);
  }
  const method = agentType.methods.find((m) => m.name === methodName);
  if (method === undefined) {
    const known = agentType.methods.map((m) => m.name).join(", ") || "none";
    throw usageError(`agent type "${agentTypeName}" has no method "${methodName}" (methods: ${known})`);
  }
  return { agentType, method };
}

function member(object: JsonValue, name: string, at: string): JsonValue {
  if (!isJsonObject(object)) throw malformed(at, "must be an object");
  const value = getMember(object, name);
  if (value === undefined) throw malformed(`${at}.${name}`, "is required");
  return value;
}

function text(value: JsonValue, at: string): string {
  if (typeof value !== "string" || value === "") throw malformed(at, "must be a non-empty string");
  return value;
}

function graph(value: JsonValue, at: string, streams: "allowed" | "forbidden"): SchemaGraph {
  try {
    return decodeSchemaGraph(value, { streams });
  } catch (error) {
    throw malformed(at, `is not a valid SchemaGraph (${error instanceof Error ? error.message : String(error)})`);
  }
}

function malformed(path: string, message: string): ProtocolError {
  return new ProtocolError("invalid-message", `${path}: ${message}`, { path });
}

/** The public HTTP error envelope (decisions §5): `{"code","error"}`, or `{"code","errors":[..]}` for 400. */
function httpFailure(
  { status, body, location }: HttpResponse,
  asked: { readonly application: string; readonly environment: string },
  url: URL,
): CliError {
  let code = "";
  let message =
    status >= 300 && status < 400 && location !== undefined
      ? `HTTP ${status}, a redirect to ${location} (not followed: pass its origin as --url)`
      : `HTTP ${status}`;
  try {
    const envelope = parseStrictJson(body, { maxBytes: 64 * 1024, what: "error response" });
    if (isJsonObject(envelope)) {
      const c = getMember(envelope, "code");
      const error = getMember(envelope, "error");
      const errors = getMember(envelope, "errors");
      if (typeof c === "string") code = c;
      if (typeof error === "string") message = error;
      else if (Array.isArray(errors) && typeof errors[0] === "string") message = errors[0];
    }
  } catch {
    // Not the envelope (a proxy's HTML page, say): the status says enough.
  }
  // A TLS port's answer to this plain request: no refusal of the request, a wrong --url.
  const plain = plainHttpRefusal(url, status, code);
  if (plain !== undefined) return new CliError(EXIT.connectionLost, `cannot reach ${url.origin}: ${plain}`, { code });
  const exitCode = status === 401 || status === 403 ? EXIT.rejected : status === 404 ? EXIT.usage : EXIT.connectionLost;
  // Not found: most often the defaults (demo/default) against a server that serves something else.
  const which =
    status === 404
      ? ` (asked for application ${JSON.stringify(asked.application)}, environment ${JSON.stringify(asked.environment)}; ${SELECTOR_HINT})`
      : "";
  // 5xx: the server (or a proxy before it) failed or is overloaded/restarting; asking again may work.
  return new CliError(exitCode, `discovery failed: ${code === "" ? "" : `${code}: `}${message.slice(0, 500)}${which}`, {
    code,
    retryable: status >= 500,
  });
}

/**
 * Failures a server that is restarting, or briefly unreachable, produces: worth retrying. Not a
 * name that does not resolve, nor TLS: those are a wrong `--url`, which retrying cannot fix.
 */
const TRANSIENT_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENETDOWN",
]);

function isTransient(error: unknown, signal: AbortSignal): boolean {
  if (signal.aborted) return signal.reason instanceof Error && signal.reason.name === "TimeoutError";
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && TRANSIENT_CODES.has(code);
}

function describeConnectionError(error: unknown, signal: AbortSignal): string {
  if (signal.aborted) {
    const reason: unknown = signal.reason;
    if (reason instanceof Error && reason.name === "TimeoutError") return "no answer within --timeout";
    return reason instanceof Error ? reason.message : String(reason);
  }
  // TLS: Node's text (a wrong host name's names both sides) with what to do about it.
  const tls = tlsFailure(error);
  if (tls !== undefined) return tls;
  // Node's own errors carry the reason (ECONNREFUSED, ENOTFOUND) as their code.
  const { code, message } = error as { code?: unknown; message?: unknown };
  const codeText = typeof code === "string" ? code : undefined;
  const line = typeof message === "string" ? message.split("\n")[0]?.trim() : undefined;
  if (line !== undefined && line !== "") return codeText === undefined || line.includes(codeText) ? line : `${line} (${codeText})`;
  if (codeText !== undefined) return codeText;
  return String(error);
}

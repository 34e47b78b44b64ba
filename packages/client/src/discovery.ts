/**
 * Reads the server's agent catalogue (`GET /v1/agents/types`, outside the
 * frozen session protocol; format in docs/protocol/server.md) so callers can
 * invoke with plain JavaScript values instead of native SchemaValue JSON.
 * The response is bounded before it is buffered and decoded strictly.
 */
import { decodeSchemaGraph, type SchemaGraph } from "@golem-stream/schema-value";
import { MiB, ProtocolError, getMember, isJsonObject, parseStrictJson, type JsonValue } from "@golem-stream/wire";
import { catalogueRefusal } from "./catalogue-refusal.js";
import { ClientError, serverViolation } from "./errors.js";
import type { CatalogueRequestInit } from "./transport.js";
import { pageOriginHint } from "./page-origin-hint.js";

export const DISCOVERY_PATH = "/v1/agents/types";
/**
 * Default of `ClientOptions.maxCatalogueBytes`: a wire message's bound, about 35 000 agent types
 * of one small method each. A server may serve more (catalogues have no size limit), so it is an option.
 */
export const DEFAULT_MAX_CATALOGUE_BYTES = 8 * MiB;
/**
 * The largest `maxCatalogueBytes`: the text is decoded into one string, and V8's longest is just
 * under 512 Mi UTF-16 units; a bound near that would fail as a decoding error, not as itself.
 */
export const MAX_CATALOGUE_BYTES_OPTION = 256 * MiB;

/** One method of an agent type in the server's catalogue. */
export interface MethodSchema {
  /** The method's name. */
  readonly name: string;
  /** Rooted at the record of parameters. */
  readonly parameters: SchemaGraph;
  /** Absent for a method without a result. */
  readonly result: SchemaGraph | undefined;
}

/** One agent type as the server's catalogue describes it (`Agent.schema`, `checkSchema`). */
export interface AgentTypeSchema {
  /** The agent type's name. */
  readonly name: string;
  /** Rooted at the record of constructor parameters. */
  readonly constructorParameters: SchemaGraph;
  /** Its methods by name. */
  readonly methods: ReadonlyMap<string, MethodSchema>;
}

/** `ws://h:p/v1/agents/invoke-agent-session` → `http://h:p/v1/agents/types?application=…&environment=…`. */
export function discoveryUrl(sessionUrl: string, application: string, environment: string): string {
  const url = new URL(sessionUrl);
  url.protocol = url.protocol === "wss:" ? "https:" : "http:";
  url.pathname = DISCOVERY_PATH;
  url.search = new URLSearchParams({ application, environment }).toString();
  return url.toString();
}

/**
 * Reads the catalogue at `url` (`discoveryUrl`), refusing one of more than `maxBytes` without reading
 * it all. `signal` aborts the request and the download, which then fail with `aborted`. `request`
 * makes the `GET` (the transport's `fetch`, else the global one).
 */
export async function fetchCatalogue(
  url: string,
  token: string,
  maxBytes: number,
  signal?: AbortSignal,
  request: (url: string, init: CatalogueRequestInit) => Promise<Response> = fetch,
): Promise<ReadonlyMap<string, AgentTypeSchema>> {
  let response: Response;
  let body: Uint8Array;
  try {
    response = await request(url, { headers: { authorization: `Bearer ${token}` }, ...(signal === undefined ? {} : { signal }) });
  } catch (cause) {
    // A transport's own ClientError (wsTransport's refused certificate) says it all already.
    throw (
      aborted(url, signal) ??
      (cause instanceof ClientError
        ? cause
        : new ClientError("connection-lost", `could not reach the discovery endpoint ${url}: ${fetchFailure(cause)}${pageOriginHint()}`, {
            cause,
          }))
    );
  }
  try {
    body = await readBounded(response, maxBytes, url);
  } catch (error) {
    // A body cut short rejects the reader with fetch's bare `TypeError: terminated`.
    throw (
      aborted(url, signal) ??
      (error instanceof ClientError
        ? error
        : new ClientError(
            "connection-lost",
            `the connection to the discovery endpoint ${url} was lost while reading the catalogue: ${fetchFailure(error)}`,
            {
              cause: error,
            },
          ))
    );
  }
  // An error's body is its envelope, if it is one: not a catalogue, so not held to being JSON.
  if (!response.ok) throw catalogueRefusal(response.status, body, askedFor(url), url);
  let json: JsonValue;
  try {
    json = parseStrictJson(body, { maxBytes, what: "agent catalogue" });
  } catch (error) {
    throw serverViolation(error);
  }
  return decodeCatalogue(json);
}

/**
 * The caller's abort, as every aborted operation of the client fails (kind `aborted`); fetch and the
 * body's reader throw the signal's reason, which need not be an error of ours, or even an error.
 */
function aborted(url: string, signal: AbortSignal | undefined): ClientError | undefined {
  if (signal?.aborted !== true) return undefined;
  return new ClientError("aborted", `the agent catalogue request (${catalogueOf(url)}) was aborted by the caller's signal`, {
    cause: signal.reason,
  });
}

/** The most names a `not-found` lists: enough to spot a misspelt name, short enough to read. */
const MAX_LISTED_NAMES = 8;

/** `"a", "b" and 3 more`: the first names, quoted, in catalogue order. */
function listedNames(known: readonly string[]): string {
  const listed = known.slice(0, MAX_LISTED_NAMES).map((name) => JSON.stringify(name));
  const more = known.length > MAX_LISTED_NAMES ? ` and ${known.length - MAX_LISTED_NAMES} more` : "";
  return `${listed.join(", ")}${more}`;
}

/**
 * The refusal of an agent type the catalogue at `url` lacks (`rejected`, `not-found`, as the
 * server's own refusal of an unknown agent type): it names the application and environment asked
 * for and the types there are, so a misspelt name, or the wrong environment, shows at once.
 */
export function agentTypeNotFound(url: string, agentType: string, known: readonly string[]): ClientError {
  const types = known.length === 0 ? "it has no agent types" : `known: ${listedNames(known)}`;
  return new ClientError("rejected", `agent type ${JSON.stringify(agentType)} is not in the catalogue of ${catalogueOf(url)} (${types})`, {
    code: "not-found",
  });
}

/**
 * The refusal of a method the served agent type lacks (`invalid-argument`, `not-found`): it names
 * the methods there are, as `agentTypeNotFound` names the agent types, so a misspelt name shows.
 */
export function methodNotFound(agentType: string, method: string, known: readonly string[]): ClientError {
  const methods = known.length === 0 ? "it has no methods" : `methods: ${listedNames(known)}`;
  const message = `agent type ${JSON.stringify(agentType)} has no method ${JSON.stringify(method)} (${methods})`;
  return new ClientError("invalid-argument", message, { code: "not-found" });
}

/** `(asked for application "a", environment "e")`, from a discovery URL (`discoveryUrl`). */
function askedFor(url: string): string {
  return `(asked for ${catalogueOf(url)})`;
}

/** `application "a", environment "e"`, from a discovery URL. */
function catalogueOf(url: string): string {
  const query = new URL(url).searchParams;
  return `application ${JSON.stringify(query.get("application"))}, environment ${JSON.stringify(query.get("environment"))}`;
}

/**
 * Why `fetch` failed, from what it knows: Node's `fetch failed` hides the reason (ECONNREFUSED,
 * ENOTFOUND, a TLS error) in its cause chain; an abort says it was aborted.
 */
function fetchFailure(error: unknown): string {
  const parts: string[] = [];
  for (let at: unknown = error, depth = 0; at !== undefined && at !== null && depth < 4; at = (at as { cause?: unknown }).cause, depth++) {
    const { code, message } = at as { code?: unknown; message?: unknown };
    const said = typeof message === "string" && message !== "" && message !== "fetch failed" ? message : undefined;
    const part =
      said === undefined
        ? typeof code === "string"
          ? code
          : undefined
        : typeof code === "string" && !said.includes(code)
          ? `${said} (${code})`
          : said;
    if (part !== undefined && !parts.includes(part)) parts.push(part);
  }
  return parts.length === 0 ? String(error) : parts.join(": ");
}

/**
 * A catalogue past the caller's bound: not the server's fault (a catalogue has no size limit) but
 * this client's limit, so the message names the option that raises it. Kind and code are those of
 * any message past a bound the client keeps (`server-violation`, `limit-exceeded`).
 */
function catalogueTooLarge(url: string, maxBytes: number, declared?: number): ClientError {
  const bound = maxBytes % MiB === 0 ? `${maxBytes / MiB} MiB` : `${maxBytes} bytes`;
  const size = declared === undefined ? "" : `; the server declares ${declared} bytes`;
  return new ClientError(
    "server-violation",
    `the agent catalogue of ${catalogueOf(url)} is larger than this client reads (maxCatalogueBytes, ${bound}${size}): ` +
      `give createClient a larger maxCatalogueBytes (at most ${MAX_CATALOGUE_BYTES_OPTION / MiB} MiB)`,
    { code: "limit-exceeded" },
  );
}

async function readBounded(response: Response, maxBytes: number, url: string): Promise<Uint8Array> {
  const declared = Number(response.headers.get("content-length") ?? "0");
  if (declared > maxBytes) {
    // An unread body would keep the connection, and the server sending it, busy until collected.
    await response.body?.cancel().catch(() => undefined);
    throw catalogueTooLarge(url, maxBytes, declared);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  // A reader, not `for await`: not every runtime makes a ReadableStream async-iterable.
  const reader = response.body?.getReader();
  if (reader !== undefined) {
    try {
      for (let read = await reader.read(); !read.done; read = await reader.read()) {
        size += read.value.byteLength;
        if (size > maxBytes) {
          await reader.cancel().catch(() => undefined); // stop the download, free the connection
          throw catalogueTooLarge(url, maxBytes);
        }
        chunks.push(read.value);
      }
    } finally {
      reader.releaseLock();
    }
  }
  const body = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    body.set(chunk, at);
    at += chunk.byteLength;
  }
  return body;
}

function decodeCatalogue(json: JsonValue): Map<string, AgentTypeSchema> {
  const bad = (what: string): ClientError => serverViolation(new ProtocolError("invalid-message", `agent catalogue: ${what}`));
  const types = isJsonObject(json) ? getMember(json, "agentTypes") : undefined;
  if (!Array.isArray(types)) throw bad("agentTypes must be an array");
  const out = new Map<string, AgentTypeSchema>();
  try {
    for (const type of types) {
      if (!isJsonObject(type)) throw bad("an agent type must be an object");
      const name = getMember(type, "name");
      const methods = getMember(type, "methods");
      if (typeof name !== "string" || !Array.isArray(methods)) throw bad("an agent type needs a name and methods");
      const byName = new Map<string, MethodSchema>();
      for (const method of methods) {
        if (!isJsonObject(method)) throw bad("a method must be an object");
        const methodName = getMember(method, "name");
        const parameters = getMember(method, "parameters");
        const result = getMember(method, "result");
        if (typeof methodName !== "string" || parameters === undefined) throw bad("a method needs a name and parameters");
        byName.set(methodName, {
          name: methodName,
          parameters: decodeSchemaGraph(parameters),
          result: result === undefined ? undefined : decodeSchemaGraph(result),
        });
      }
      const constructorParameters = getMember(type, "constructorParameters");
      if (constructorParameters === undefined) throw bad("an agent type needs constructorParameters");
      out.set(name, { name, constructorParameters: decodeSchemaGraph(constructorParameters), methods: byName });
    }
  } catch (error) {
    throw serverViolation(error);
  }
  return out;
}

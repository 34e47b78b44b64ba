/**
 * Reads the server's catalogue (`GET /v1/agents/types`, same origin, the
 * token in `Authorization`) and decodes every graph with the client's own
 * schema codec. Failures become sentences a person can act on.
 */
import { decodeSchemaGraph, type SchemaGraph } from "@golem-stream/schema-value";

export interface MethodEntry {
  readonly name: string;
  readonly parameters: SchemaGraph;
  readonly result: SchemaGraph | undefined;
}

export interface AgentTypeEntry {
  readonly name: string;
  readonly constructorParameters: SchemaGraph;
  readonly methods: readonly MethodEntry[];
}

/**
 * A refusal the page explains; `code` is the server's public error code when it sent one, `status`
 * the HTTP status it answered with (undefined when there was no answer).
 */
export class ConsoleError extends Error {
  readonly code: string | undefined;
  readonly status: number | undefined;
  constructor(message: string, code?: string, status?: number) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

/**
 * Whether a refused catalogue request shows that the server accepted the token: a `not-found`
 * (404) or a `forbidden` (403) comes only after the request was authenticated (the server checks
 * the Host and the page's origin first too, but then the page and the origin check before the
 * sign-in would have been refused as well). Anything else (`overloaded` from an address throttled
 * after failed authentications, a 5xx, a proxy's page, no answer) says nothing of the token.
 */
export function acceptedToken(error: unknown): boolean {
  if (!(error instanceof ConsoleError)) return false;
  return (error.status === 404 && error.code === "not-found") || (error.status === 403 && error.code === "forbidden");
}

const MAX_CATALOGUE_BYTES = 8 * 1024 * 1024;
const DISCOVERY_PATH = "/v1/agents/types";

/**
 * Whether the server lets pages of this origin open sessions. A refused
 * WebSocket handshake is unreadable for a page (it would only look like a
 * network failure, retried for minutes), so the console asks first: an
 * `OPTIONS` of the catalogue carries this page's `Origin`, which the server
 * answers 403 when the origin is not allowed. (`referrerPolicy: "origin"`:
 * under the page's no-referrer policy the browser would send `Origin: null`.)
 */
export async function checkOriginAllowed(): Promise<void> {
  let response: Response;
  try {
    response = await fetch(DISCOVERY_PATH, { method: "OPTIONS", referrerPolicy: "origin", cache: "no-store", credentials: "omit" });
  } catch {
    throw new ConsoleError("The server cannot be reached.");
  }
  if (response.status === 403) {
    throw new ConsoleError(
      `This server does not let pages of ${location.origin} open sessions. Open the console at the address golem-stream serve printed, or start serve with --allow-origin ${location.origin}.`,
      "forbidden",
    );
  }
}

export async function loadCatalogue(token: string, application: string, environment: string): Promise<AgentTypeEntry[]> {
  const url = `${DISCOVERY_PATH}?${new URLSearchParams({ application, environment }).toString()}`;
  let response: Response;
  try {
    response = await fetch(url, { headers: { authorization: `Bearer ${token}` }, cache: "no-store", credentials: "omit" });
  } catch {
    throw new ConsoleError("The server cannot be reached.");
  }
  const text = await response.text();
  if (text.length > MAX_CATALOGUE_BYTES) throw new ConsoleError("The catalogue is larger than this console reads (8 MiB).");
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ConsoleError(`The server answered HTTP ${response.status} with something that is not JSON.`, undefined, response.status);
  }
  if (!response.ok) {
    const code = typeof (body as { code?: unknown }).code === "string" ? (body as { code: string }).code : undefined;
    throw new ConsoleError(refusal(response.status, code, application, environment), code, response.status);
  }
  const types = (body as { agentTypes?: unknown }).agentTypes;
  if (!Array.isArray(types)) throw new ConsoleError("The catalogue has no agentTypes list.");
  return types.map(
    (type: { name: string; constructorParameters: unknown; methods: { name: string; parameters: unknown; result?: unknown }[] }) => ({
      name: type.name,
      constructorParameters: decodeSchemaGraph(type.constructorParameters as never),
      methods: type.methods.map((method) => ({
        name: method.name,
        parameters: decodeSchemaGraph(method.parameters as never, { streams: "allowed" }),
        result: method.result === undefined ? undefined : decodeSchemaGraph(method.result as never, { streams: "allowed" }),
      })),
    }),
  );
}

function refusal(status: number, code: string | undefined, application: string, environment: string): string {
  switch (code) {
    case "unauthenticated":
      return "The server refused this token (unauthenticated). Check it and sign in again.";
    case "forbidden":
      return status === 403 && location.origin
        ? `Forbidden: this token may not read the catalogue, or the server does not allow pages of ${location.origin} (start serve with --allow-origin ${location.origin}).`
        : "Forbidden.";
    case "not-found":
      return `There is no application "${application}" with environment "${environment}" on this server.`;
    case "overloaded":
      return `The server is busy, or refuses this address for a while after failed sign-ins (HTTP ${status}, overloaded). Try again later.`;
    default:
      return `The server refused the catalogue request (HTTP ${status}${code === undefined ? "" : `, ${code}`}).`;
  }
}

/**
 * The operations endpoints on the server's HTTP listener, each off unless
 * configured: `/metrics` (Prometheus text format), `/healthz` (the process
 * answers) and `/readyz` (the store answers and the server takes sessions).
 * They need no bearer token: load balancers and scrapers call them, and
 * they reveal no session, token or key.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Registry } from "prom-client";
import type { CatalogueDetails } from "../cluster/catalogue-check.js";

export const METRICS_PATH = "/metrics";
export const HEALTH_PATH = "/healthz";
export const READY_PATH = "/readyz";

export interface Readiness {
  readonly ready: boolean;
  /** Each check and whether it passed: `store` (reachable), `started` (recovery done), `accepting` (not draining or closing). */
  readonly checks: Readonly<Record<"store" | "started" | "accepting", boolean>>;
  /** What a check found beyond pass or fail: in cluster mode, `catalogue` (this node's fingerprint, and live nodes serving another). */
  readonly details?: { readonly catalogue?: CatalogueDetails };
}

export interface OperationsEndpoints {
  readonly registry: Registry | undefined;
  readonly health: boolean;
  readiness(): Promise<Readiness>;
}

/** Whether `pathname` is an enabled operations endpoint. */
export function isOperationsPath(pathname: string, endpoints: OperationsEndpoints): boolean {
  return (
    (pathname === METRICS_PATH && endpoints.registry !== undefined) ||
    ((pathname === HEALTH_PATH || pathname === READY_PATH) && endpoints.health)
  );
}

/**
 * The enabled endpoints answered even over `limits.maxHttpConnections`:
 * liveness and the scrape must not fail because the server is busy. Not
 * `/readyz`: a node at its connection budget is rightly not ready for more,
 * and the `overloaded` answer tells the load balancer so.
 */
export function probePaths(endpoints: OperationsEndpoints): ReadonlySet<string> {
  return new Set([...(endpoints.health ? [HEALTH_PATH] : []), ...(endpoints.registry === undefined ? [] : [METRICS_PATH])]);
}

/** Answers the request if it is for an enabled operations endpoint; returns whether it did. */
export async function handleOperationsRequest(
  pathname: string,
  request: IncomingMessage,
  response: ServerResponse,
  endpoints: OperationsEndpoints,
): Promise<boolean> {
  const registry = endpoints.registry;
  if (!isOperationsPath(pathname, endpoints)) return false;
  if (request.method !== "GET" && request.method !== "HEAD") {
    send(response, 405, "text/plain; charset=utf-8", "method not allowed\n", { allow: "GET, HEAD" });
    return true;
  }
  if (pathname === METRICS_PATH && registry !== undefined) {
    try {
      send(response, 200, registry.contentType, await registry.metrics());
    } catch {
      send(response, 500, "text/plain; charset=utf-8", "metrics unavailable\n");
    }
  } else if (pathname === HEALTH_PATH) {
    send(response, 200, "application/json", `${JSON.stringify({ status: "ok" })}\n`);
  } else {
    const readiness = await endpoints.readiness();
    const body = {
      status: readiness.ready ? "ready" : "not-ready",
      checks: readiness.checks,
      ...(readiness.details === undefined ? {} : { details: readiness.details }),
    };
    send(response, readiness.ready ? 200 : 503, "application/json", `${JSON.stringify(body)}\n`);
  }
  return true;
}

function send(response: ServerResponse, status: number, type: string, body: string, headers: Record<string, string> = {}): void {
  response.writeHead(status, { "content-type": type, "cache-control": "no-store", ...headers });
  response.end(response.req.method === "HEAD" ? undefined : body);
}

/**
 * The `serve` flags that bound what clients may hold (docs/operations.md,
 * "Limits and abuse") as the server's `limits`: each flag left out keeps the
 * server's own default.
 */
import type { ServerLimits } from "@golem-stream/server";
import type { ServeOptions } from "../options.js";

export function serveLimits(options: ServeOptions): Partial<ServerLimits> {
  const limits: { -readonly [K in keyof ServerLimits]?: ServerLimits[K] } = {};
  if (options.authFailureLimit !== undefined) limits.authFailuresPerAddress = options.authFailureLimit;
  if (options.firstMessageTimeout !== undefined) limits.firstMessageTimeoutMs = options.firstMessageTimeout;
  if (options.httpRequestTimeout !== undefined) limits.httpRequestTimeoutMs = options.httpRequestTimeout;
  if (options.pingInterval !== undefined) limits.pingIntervalMs = options.pingInterval;
  if (options.maxConnections !== undefined) limits.maxConnections = options.maxConnections;
  if (options.maxHttpConnections !== undefined) limits.maxHttpConnections = options.maxHttpConnections;
  if (options.maxConnectionsPerPrincipal !== undefined) limits.maxConnectionsPerPrincipal = options.maxConnectionsPerPrincipal;
  if (options.maxSessionsPerPrincipal !== undefined) limits.maxRunningSessionsPerPrincipal = options.maxSessionsPerPrincipal;
  if (options.maxStoredBytesPerPrincipal !== undefined) limits.maxStoredBytesPerPrincipal = options.maxStoredBytesPerPrincipal;
  return limits;
}

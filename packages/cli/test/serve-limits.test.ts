/** `serve`'s bound flags as the server's limits (the flags on a real process: cli-serve-limits.e2e.test.ts). */
import { expect, it } from "vitest";
import { serveLimits } from "../src/commands/serve-limits.js";
import type { ServeOptions } from "../src/options.js";

it("every bound flag becomes its server limit; a flag left out keeps the server's default", () => {
  const base = {} as ServeOptions;
  expect(serveLimits(base)).toEqual({});
  expect(
    serveLimits({
      ...base,
      authFailureLimit: 0,
      firstMessageTimeout: 1000,
      httpRequestTimeout: 1500,
      pingInterval: 2000,
      maxConnections: 5,
      maxHttpConnections: 7,
      maxConnectionsPerPrincipal: 3,
      maxSessionsPerPrincipal: 4,
      maxStoredBytesPerPrincipal: 6,
    }),
  ).toEqual({
    authFailuresPerAddress: 0,
    firstMessageTimeoutMs: 1000,
    httpRequestTimeoutMs: 1500,
    pingIntervalMs: 2000,
    maxConnections: 5,
    maxHttpConnections: 7,
    maxConnectionsPerPrincipal: 3,
    maxRunningSessionsPerPrincipal: 4,
    maxStoredBytesPerPrincipal: 6,
  });
});

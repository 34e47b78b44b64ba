/** The project's server on loopback (demo catalogue, SQLite in a temporary directory), restartable in place. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startEmbeddedServer, type EmbeddedServer, type ServerLimits } from "@golem-stream/server";
import type { SuiteOptions } from "../../src/index.js";

export const TOKEN = "conformance-token";
/** A second principal of the bounded server, for the per-principal checks. */
export const BOUNDED_TOKEN = "conformance-bounded-token";
/** A principal of every server under test besides `TOKEN`'s, for the `authorization` checks (`otherPrincipalToken`). */
export const OTHER_PRINCIPAL_TOKEN = "conformance-other-principal-token";

/**
 * The bounded server's settings: a short first-message deadline and ping
 * interval (the liveness checks wait for them) and small per-principal bounds
 * (the principal checks open that many connections and invocations).
 */
export const BOUNDED_LIMITS = {
  firstMessageTimeoutMs: 1500,
  pingIntervalMs: 250,
  maxConnectionsPerPrincipal: 5,
  maxRunningSessionsPerPrincipal: 2,
} as const satisfies Partial<ServerLimits>;

/** What the suite is told of the bounded server (the hardening checks run only when told). */
export const BOUNDED_SUITE_OPTIONS = { ...BOUNDED_LIMITS, boundedToken: BOUNDED_TOKEN } as const satisfies Partial<SuiteOptions>;

export interface ServerUnderTest {
  readonly url: string;
  readonly port: number;
  /** Closes the server and starts it again on the same port with the same durable state. */
  restart(): Promise<void>;
  /** The server's `golem_stream_connections_open`: session WebSockets open now. */
  connectionsOpen(): Promise<number>;
  dispose(): Promise<void>;
}

const CONNECTIONS_OPEN = "golem_stream_connections_open";

/**
 * The project's server with its defaults and two principals (`TOKEN`, `OTHER_PRINCIPAL_TOKEN`), or
 * (`bounded`) with `BOUNDED_LIMITS` and a third principal (`BOUNDED_TOKEN`).
 * `limits`: more limits, e.g. `{ maxReplays: 0 }`, a server that fails what a restart interrupted instead of re-running it.
 */
export async function startServerUnderTest(options: { bounded?: boolean; limits?: Partial<ServerLimits> } = {}): Promise<ServerUnderTest> {
  const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-conformance-"));
  const limits = { ...(options.bounded === true ? BOUNDED_LIMITS : {}), ...options.limits };
  const settings = { tokens: [TOKEN, OTHER_PRINCIPAL_TOKEN, ...(options.bounded === true ? [BOUNDED_TOKEN] : [])], limits };
  let server: EmbeddedServer = await startEmbeddedServer({ dataDir, ...settings, synchronous: "normal", metrics: true });
  const port = Number(new URL(server.url).port);
  return {
    url: server.url,
    port,
    async restart() {
      await server.close();
      server = await startEmbeddedServer({ dataDir, ...settings, synchronous: "normal", metrics: true, port });
    },
    async connectionsOpen() {
      const gauge = server.server.metrics?.getSingleMetric(CONNECTIONS_OPEN);
      if (gauge === undefined) throw new Error(`the server has no ${CONNECTIONS_OPEN} metric`);
      return (await gauge.get()).values.reduce((sum, v) => sum + v.value, 0);
    },
    async dispose() {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

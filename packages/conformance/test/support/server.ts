/** The project's server on loopback (demo catalogue, SQLite in a temporary directory), restartable in place. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startEmbeddedServer, type EmbeddedServer, type ServerLimits } from "@golem-stream/server";

export const TOKEN = "conformance-token";

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

/** `limits`: e.g. `{ maxReplays: 0 }`, a server that fails what a restart interrupted instead of re-running it. */
export async function startServerUnderTest(limits: Partial<ServerLimits> = {}): Promise<ServerUnderTest> {
  const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-conformance-"));
  let server: EmbeddedServer = await startEmbeddedServer({ dataDir, tokens: [TOKEN], synchronous: "normal", metrics: true, limits });
  const port = Number(new URL(server.url).port);
  return {
    url: server.url,
    port,
    async restart() {
      await server.close();
      server = await startEmbeddedServer({ dataDir, tokens: [TOKEN], synchronous: "normal", metrics: true, port, limits });
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

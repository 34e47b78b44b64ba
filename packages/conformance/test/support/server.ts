/** The project's server on loopback (demo catalogue, SQLite in a temporary directory), restartable in place. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startEmbeddedServer, type EmbeddedServer } from "@golem-stream/server";

export const TOKEN = "conformance-token";

export interface ServerUnderTest {
  readonly url: string;
  readonly port: number;
  /** Closes the server and starts it again on the same port with the same durable state. */
  restart(): Promise<void>;
  dispose(): Promise<void>;
}

export async function startServerUnderTest(): Promise<ServerUnderTest> {
  const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-conformance-"));
  let server: EmbeddedServer = await startEmbeddedServer({ dataDir, tokens: [TOKEN], synchronous: "normal" });
  const port = Number(new URL(server.url).port);
  return {
    url: server.url,
    port,
    async restart() {
      await server.close();
      server = await startEmbeddedServer({ dataDir, tokens: [TOKEN], synchronous: "normal", port });
    },
    async dispose() {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

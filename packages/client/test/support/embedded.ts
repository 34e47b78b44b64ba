/** The real server on loopback, in a fresh temporary data directory per test file. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createSessionServer,
  Keyring,
  MemorySessionStore,
  startEmbeddedServer,
  StaticAgentHost,
  type EmbeddedServer,
  type EmbeddedServerOptions,
} from "@golem-stream/server";
import { createClient, type Client } from "../../src/index.js";

export const TOKEN = "t";

export async function startServer(extra: Partial<EmbeddedServerOptions> = {}): Promise<EmbeddedServer & { dispose(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-client-"));
  // `normal` durability keeps the suite fast; crash safety is the server's own test subject.
  const server = await startEmbeddedServer({ port: 0, host: "127.0.0.1", dataDir, tokens: [TOKEN], synchronous: "normal", ...extra });
  return Object.assign(server, {
    async dispose() {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  });
}

export type TestServer = Awaited<ReturnType<typeof startServer>>;

/** The real server on loopback (`startServer`) and a client of it with the test token: most test files' set-up. */
export async function startServerWithClient(extra: Partial<EmbeddedServerOptions> = {}): Promise<{ server: TestServer; client: Client }> {
  const server = await startServer(extra);
  return { server, client: createClient({ url: server.url, token: TOKEN }) };
}

/**
 * A session server in memory hosting `applications` (application, environment, agent types), the
 * test token its one credential, and a client of it: for agent types of a test's own.
 */
export async function startHostServer(
  applications: ConstructorParameters<typeof StaticAgentHost>[0],
): Promise<{ url: string; client: Client; close(): Promise<void> }> {
  const sessions = createSessionServer({
    store: new MemorySessionStore(),
    host: new StaticAgentHost(applications),
    keyring: Keyring.generate("k1"),
    authenticator: (token) => (token === TOKEN ? { account: "acme", principal: "alice" } : undefined),
  });
  const { url } = await sessions.listen();
  return { url, client: createClient({ url, token: TOKEN }), close: () => sessions.close() };
}

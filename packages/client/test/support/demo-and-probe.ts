/**
 * The two real servers most loopback suites need, started together: the
 * embedded demo server and the probe server, with a client for each (three
 * reconnect attempts, so a broken test fails fast instead of retrying).
 */
import { createClient, type Client } from "../../src/index.js";
import { startServer, TOKEN } from "./embedded.js";
import { startProbeServer, type ProbeServer } from "./probe-server.js";

export interface DemoAndProbe {
  readonly server: Awaited<ReturnType<typeof startServer>>;
  readonly probe: ProbeServer;
  readonly client: Client;
  readonly probeClient: Client;
  dispose(): Promise<void>;
}

export async function startDemoAndProbe(): Promise<DemoAndProbe> {
  const [server, probe] = await Promise.all([startServer(), startProbeServer()]);
  return {
    server,
    probe,
    client: createClient({ url: server.url, token: TOKEN, reconnect: { maxAttempts: 3 } }),
    probeClient: createClient({ url: probe.url, token: TOKEN, reconnect: { maxAttempts: 3 } }),
    dispose: async () => {
      await Promise.all([server.dispose(), probe.close()]);
    },
  };
}

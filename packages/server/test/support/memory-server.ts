/**
 * A demo server over an in-memory store with two principals, listening on
 * loopback, for tests that need options `startEmbeddedServer` does not take
 * (an injected clock): `alice-token` is alice and `bob-token` bob, both of
 * account `acme`.
 */
import { createSessionServer, Keyring, MemorySessionStore, type SessionServer, type SessionServerOptions } from "../../src/index.js";
import { createDemoHost } from "../../src/demo/index.js";

export const ALICE = "alice-token";
export const BOB = "bob-token";

export interface MemoryServer {
  readonly server: SessionServer;
  /** `ws://127.0.0.1:port` */
  readonly url: string;
  readonly httpUrl: string;
  close(): Promise<void>;
}

export async function startMemoryServer(options: Partial<SessionServerOptions> = {}): Promise<MemoryServer> {
  const store = new MemorySessionStore();
  const principals = new Map([
    [ALICE, "alice"],
    [BOB, "bob"],
  ]);
  const server = createSessionServer({
    store,
    host: createDemoHost(),
    keyring: Keyring.generate("k1"),
    authenticator: (token) => {
      const principal = principals.get(token);
      return principal === undefined ? undefined : { account: "acme", principal };
    },
    ...options,
  });
  const address = await server.listen();
  return {
    server,
    url: address.url,
    httpUrl: address.httpUrl,
    close: async () => {
      await server.close();
      await store.close();
    },
  };
}

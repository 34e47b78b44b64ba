/** Loopback test helpers: a temporary embedded server and a raw `ws` protocol client. */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { InvocationStart, SchemaValueJson } from "@golem-stream/wire";
import { afterAll, beforeAll } from "vitest";
import { Keyring } from "@golem-stream/tokens";
import {
  createSessionServer,
  startEmbeddedServer,
  StaticAgentHost,
  type AgentTypeDefinition,
  type EmbeddedServer,
  type EmbeddedServerOptions,
  type Logger,
  type PartialObserver,
  type SessionServer,
  type SessionServerOptions,
  type SessionStore,
} from "../src/index.js";
import { createDemoHost } from "../src/demo/index.js";

import { TEST_TOKEN as TOKEN } from "../src/testing/raw-client.js";

export { TOKEN };

export interface TestServer extends EmbeddedServer {
  readonly dataDir: string;
  /** Closes the server and deletes its data directory. */
  dispose(): Promise<void>;
}

export async function startTestServer(options: Partial<EmbeddedServerOptions> = {}): Promise<TestServer> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "golem-stream-server-"));
  const server = await startEmbeddedServer({ tokens: [TOKEN, "other-token"], synchronous: "normal", ...options, dataDir });
  return {
    ...server,
    dataDir,
    dispose: async () => {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export { RawClient, type Closed } from "../src/testing/raw-client.js";
export { v, demoStart, outputValues, resumeAttach } from "../src/testing/demo-messages.js";

/** A fresh start (new attempt id and idempotency key) of `method` of a test agent type, in environment `default`, with an empty constructor record. */
export function agentStart(application: string, agentType: string, method: string, methodParameters: SchemaValueJson): InvocationStart {
  return {
    type: "invocationStart",
    attemptId: randomUUID(),
    config: [],
    idempotencyKey: randomUUID(),
    methodParameters,
    selector: { agentType, application, constructorParameters: EMPTY_RECORD, environment: "default", method },
  };
}

const EMPTY_RECORD = { kind: "record", value: { fields: [] } } as unknown as SchemaValueJson;

/** The start of `method` of a test agent type in application `test`, environment `default`, whose constructor and parameters are empty records. */
export function emptyStart(agentType: string, method: string): InvocationStart {
  return agentStart("test", agentType, method, EMPTY_RECORD);
}

/**
 * The demo host served over a test's own store (a subclass that counts or fails what it is
 * handed), for the whole file: listening before its tests, closed with its store and data
 * directory after them. `url()` is the session endpoint.
 */
export function demoServerOn(
  store: SessionStore,
  dataDir: string,
  logger?: Logger,
  observers?: readonly PartialObserver[],
): { url(): string } {
  const server = createSessionServer({
    store,
    host: createDemoHost(),
    keyring: Keyring.generate("k1"),
    authenticator: (token) => (token === TOKEN ? { account: "acme", principal: "alice" } : undefined),
    ...(logger === undefined ? {} : { logger }),
    ...(observers === undefined ? {} : { observers }),
  });
  let url: string | undefined;
  beforeAll(async () => {
    url = (await server.listen()).url;
  });
  afterAll(async () => {
    await server.close();
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return {
    url: () => {
      if (url === undefined) throw new Error("the server is not listening yet");
      return url;
    },
  };
}

export { Pauses } from "../src/testing/pauses.js";

/**
 * A listening session server on `store` serving `agentTypes` (application `test`, environment
 * `default`) to the test token, `options` beside; the caller closes it.
 */
export async function serveTestAgents(
  store: SessionStore,
  agentTypes: AgentTypeDefinition[],
  options: Partial<SessionServerOptions> = {},
): Promise<{ server: SessionServer; url: string }> {
  const server = createSessionServer({
    store,
    host: new StaticAgentHost({ test: { default: agentTypes } }),
    keyring: Keyring.generate("k1"),
    authenticator: (token) => (token === TOKEN ? { account: "acme", principal: "alice" } : undefined),
    ...options,
  });
  const { url } = await server.listen();
  return { server, url };
}

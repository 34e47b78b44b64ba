/**
 * One catalogue per cluster: the fingerprint (what it covers and what not),
 * and nodes on one `MemoryCluster` comparing theirs before they join — the
 * same catalogue joins, another is refused unless drift is allowed, which
 * `/readyz` then reports.
 */
import { Keyring } from "@golem-stream/tokens";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  CatalogueDriftError,
  READY_PATH,
  StaticAgentHost,
  agentsFingerprint,
  catalogueFingerprint,
  createSessionServer,
  defineAgentType,
  implement,
  silentLogger,
  t,
  type AgentHost,
  type Catalogue,
  type Logger,
  type SessionServer,
} from "../src/index.js";
import { MemoryCluster } from "../src/store/index.js";
import { createDemoHost } from "../src/demo/index.js";

const counter = defineAgentType({
  name: "counter",
  constructor: t.record({}),
  methods: { next: { params: t.record({}), result: t.u32() } },
});
const counterV2 = defineAgentType({
  name: "counter",
  constructor: t.record({}),
  methods: { next: { params: t.record({}), result: t.u32() }, reset: { params: t.record({}) } },
});
const v1 = implement(counter, { next: () => 1 });
const catalogue = (types: Catalogue["applications"][string][string]): Catalogue => ({ applications: { app: { prod: types } } });

describe("catalogueFingerprint", () => {
  it("covers names and schemas, not implementations nor the order object members were written in", () => {
    const base = catalogueFingerprint(catalogue([v1]));
    expect(base).toMatch(/^[0-9a-f]{64}$/);
    expect(catalogueFingerprint(catalogue([implement(counter, { next: () => 2 })]))).toBe(base);
    expect(
      catalogueFingerprint({
        applications: {
          app: { prod: [{ ...v1, methods: v1.methods.map((m) => ({ result: m.result, parameters: m.parameters, name: m.name })) }] },
        },
      }),
    ).toBe(base);
    expect(catalogueFingerprint(catalogue([implement(counterV2, { next: () => 1, reset: () => undefined })]))).not.toBe(base);
    expect(catalogueFingerprint({ applications: { app: { staging: [v1] } } })).not.toBe(base);
  });

  it("covers a catalogue whose text passes the 8 MiB of a message (thousands of agent types), and discovery serves it whole", async () => {
    // 40 000 agent types of about 240 bytes of canonical text each: about 9 MiB.
    const many = Array.from({ length: 40_000 }, (_, i) => ({ ...v1, name: `counter-${i}` }));
    const large = catalogue(many);
    expect(catalogueFingerprint(large)).toMatch(/^[0-9a-f]{64}$/);
    const server = createSessionServer({
      store: new MemoryCluster().node("a"),
      host: new StaticAgentHost(large.applications),
      keyring: Keyring.generate("k1"),
      authenticator: () => ({ account: "a", principal: "p" }),
    });
    try {
      const { httpUrl } = await server.listen();
      const response = await fetch(`${httpUrl}/v1/agents/types?application=app&environment=prod`, {
        headers: { authorization: "Bearer t" },
      });
      expect(response.status).toBe(200);
      const body = (await response.json()) as { agentTypes: unknown[] };
      expect(body.agentTypes).toHaveLength(40_000);
    } finally {
      await server.close();
    }
  });

  it("agentsFingerprint: the demo's by default, the demo joined with demo: true, none for a host of one's own", () => {
    const demoOnly = agentsFingerprint({});
    expect(demoOnly).toBe(
      agentsFingerprint({ agents: { applications: { demo: { default: createDemoHost().agentTypes("demo", "default") as never } } } }),
    );
    expect(agentsFingerprint({ agents: catalogue([v1]) })).toBe(catalogueFingerprint(catalogue([v1])));
    expect(agentsFingerprint({ agents: catalogue([v1]), demo: true })).not.toBe(agentsFingerprint({ agents: catalogue([v1]) }));
    expect(agentsFingerprint({ agents: createDemoHost() })).toBeUndefined();
  });
});

describe("nodes of one cluster compare catalogues before joining", () => {
  const servers: SessionServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.close()));
  });

  const keyring = Keyring.generate("k1");
  function node(
    cluster: MemoryCluster,
    id: string,
    host: AgentHost,
    fingerprint: string,
    allowCatalogueDrift = false,
    leaseTtlMs = 10_000,
    logger?: Logger,
  ): SessionServer {
    const server = createSessionServer({
      store: cluster.node(id),
      host,
      keyring,
      authenticator: () => undefined,
      healthEndpoints: true,
      cluster: { catalogue: fingerprint, allowCatalogueDrift, leaseTtlMs },
      ...(logger === undefined ? {} : { logger }),
    });
    servers.push(server);
    return server;
  }
  const fingerprintV1 = catalogueFingerprint(catalogue([v1]));
  const fingerprintV2 = catalogueFingerprint(catalogue([implement(counterV2, { next: () => 1, reset: () => undefined })]));
  const host = new StaticAgentHost(catalogue([v1]).applications);

  it("the same catalogue joins, and readiness shows its fingerprint with nobody differing", async () => {
    const cluster = new MemoryCluster();
    await node(cluster, "a", host, fingerprintV1).listen();
    const b = node(cluster, "b", host, fingerprintV1);
    await b.listen();
    expect((await b.readiness()).details).toEqual({ catalogue: { fingerprint: fingerprintV1, differing: [] } });
    expect(cluster.catalogues.get("b")).toBe(fingerprintV1);
  });

  it("another catalogue is refused before the node joins, naming the node that differs", async () => {
    const cluster = new MemoryCluster();
    await node(cluster, "a", host, fingerprintV1).listen();
    const refused = node(cluster, "b", host, fingerprintV2).listen();
    await expect(refused).rejects.toThrow(CatalogueDriftError);
    await expect(refused).rejects.toThrow(`differs from that of node a (${fingerprintV1.slice(0, 12)})`);
    expect([...cluster.leases.keys()]).toEqual(["a"]);
    expect(cluster.catalogues.has("b")).toBe(false);
  });

  it("with drift allowed the node serves, and /readyz reports which node differs; once that node leaves, nobody does", async () => {
    const cluster = new MemoryCluster();
    const a = node(cluster, "a", host, fingerprintV1);
    await a.listen();
    // Short leases: b heartbeats (and re-checks) every 100 ms.
    const b = node(cluster, "b", host, fingerprintV2, true, 300);
    const { httpUrl } = await b.listen();
    const response = await fetch(`${httpUrl}${READY_PATH}`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      status: "ready",
      checks: { store: true, started: true, accepting: true },
      details: { catalogue: { fingerprint: fingerprintV2, differing: [{ node: "a", fingerprint: fingerprintV1 }] } },
    });
    await a.drain(0);
    // Re-checked at b's next heartbeat: polled, as that heartbeat runs on b's own timer.
    await vi.waitFor(async () => expect((await b.readiness()).details?.catalogue?.differing).toEqual([]), {
      timeout: 10_000,
      interval: 50,
    });
  });

  it("a node that did not allow drift reports a node that joined allowing it, in /readyz and its log, without saying it allowed it", async () => {
    const cluster = new MemoryCluster();
    const warnings: { message: string; fields: Record<string, unknown> | undefined }[] = [];
    const logger: Logger = { ...silentLogger, warn: (message, fields) => warnings.push({ message, fields }) };
    // Short leases: a heartbeats (and re-checks) every 100 ms.
    const a = node(cluster, "a", host, fingerprintV1, false, 300, logger);
    await a.listen();
    await node(cluster, "b", host, fingerprintV2, true).listen();
    await vi.waitFor(
      async () => expect((await a.readiness()).details?.catalogue?.differing).toEqual([{ node: "b", fingerprint: fingerprintV2 }]),
      {
        timeout: 10_000,
        interval: 50,
      },
    );
    const drift = warnings.find((warning) => warning.fields?.["event"] === "cluster.catalogue-drift");
    expect(drift?.message).toBe("live nodes serve another catalogue (they joined allowing drift; this node does not allow it)");
  });

  it("a store that cannot record catalogues: the node starts unchecked and logs that it is", async () => {
    const cluster = new MemoryCluster();
    const store = cluster.node("a");
    // The store of an earlier version: no setCatalogue, no liveCatalogues.
    const older = new Proxy(store, {
      get: (target, property) => {
        if (property === "setCatalogue" || property === "liveCatalogues") return undefined;
        const value: unknown = Reflect.get(target, property);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const warnings: { message: string; fields: unknown }[] = [];
    const logger = {
      debug: () => undefined,
      info: () => undefined,
      error: () => undefined,
      warn: (message: string, fields?: unknown) => warnings.push({ message, fields }),
    };
    const server = createSessionServer({
      store: older,
      host,
      keyring,
      authenticator: () => undefined,
      logger,
      cluster: { catalogue: fingerprintV1 },
    });
    servers.push(server);
    await server.listen();
    expect(warnings).toMatchObject([
      { message: "cannot compare catalogues with the other nodes", fields: { event: "cluster.catalogue-check-off" } },
    ]);
    expect((await server.readiness()).details).toBeUndefined();
  });
});

/**
 * One cluster node as its own process, for the real-process cluster tests:
 * `createSessionServer` with the demo host on a `PostgresSessionStore`.
 *
 * Configuration (environment):
 *   GS_PG_URL        PostgreSQL connection string
 *   GS_SCHEMA        schema the nodes share
 *   GS_NODE_ID       this node's id
 *   GS_KEYRING       the shared keyring (Keyring JSON)
 *   GS_TOKEN         the bearer token clients present
 *   GS_LEASE_TTL_MS  lease TTL (default 1000)
 *   GS_DRAIN_MS      drain timeout on SIGTERM (default 2000)
 *   GS_PORT          port (default 0: a free one)
 *   GS_OUTAGE_GRACE_MS  the store's outageGraceMs (default: the store's)
 *   GS_MAX_REPLAYS      limits.maxReplays (default: the server's)
 *
 * Prints one JSON line `{"url","port","pid","nodeId"}` on stdout once it
 * listens. SIGTERM drains (`server.drain`), prints `{"drained":{"failed":n,"handedOver":m}}`, closes the
 * store and exits 0. Warnings and errors go to stderr as JSON lines.
 */
import { createSessionServer } from "@golem-stream/server";
import { createDemoHost } from "@golem-stream/server/demo";
import { Keyring } from "@golem-stream/tokens";
// Self-reference: this package's build (dist), as a user would import it.
import { PostgresSessionStore } from "@golem-stream/store-postgres";

const env = (name, fallback) => {
  const value = process.env[name];
  if (value === undefined || value === "") {
    if (fallback === undefined) throw new Error(`${name} is required`);
    return fallback;
  }
  return value;
};

const nodeId = env("GS_NODE_ID");
const token = env("GS_TOKEN");
const drainMs = Number(env("GS_DRAIN_MS", "2000"));
const log = (level) => (message, fields) => process.stderr.write(`${JSON.stringify({ node: nodeId, level, message, ...fields })}\n`);
const logger = { info() {}, warn: log("warn"), error: log("error") };

const store = await PostgresSessionStore.connect({
  connectionString: env("GS_PG_URL"),
  schema: env("GS_SCHEMA"),
  nodeId,
  // Every connection names the node (pg_stat_activity, `current_setting('application_name')`): tests tell the nodes' writes apart.
  pool: { max: 4, application_name: nodeId },
  ...(process.env.GS_OUTAGE_GRACE_MS === undefined ? {} : { outageGraceMs: Number(process.env.GS_OUTAGE_GRACE_MS) }),
  onError: (error) => logger.error("store error", { error: String(error) }),
});
const server = createSessionServer({
  store,
  host: createDemoHost(),
  keyring: Keyring.fromJSON(env("GS_KEYRING")),
  authenticator: (bearer) => (bearer === token ? { account: "acme", principal: "alice" } : undefined),
  logger,
  cluster: { leaseTtlMs: Number(env("GS_LEASE_TTL_MS", "1000")) },
  ...(process.env.GS_MAX_REPLAYS ? { limits: { maxReplays: Number(process.env.GS_MAX_REPLAYS) } } : {}),
});
const address = await server.listen(Number(env("GS_PORT", "0")), "127.0.0.1");
process.stdout.write(`${JSON.stringify({ url: address.url, port: address.port, pid: process.pid, nodeId })}\n`);

let stopping = false;
process.on("SIGTERM", () => {
  if (stopping) return;
  stopping = true;
  const sigtermAt = Date.now();
  void (async () => {
    try {
      const drained = await server.drain(drainMs);
      process.stdout.write(`${JSON.stringify({ drained })}\n`);
      logger.warn("drained", { ...drained, sigtermAt, at: Date.now() });
      await store.close();
      process.exit(0);
    } catch (error) {
      logger.error("drain failed", { error: String(error) });
      process.exit(1);
    }
  })();
});

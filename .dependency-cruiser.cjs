/**
 * The architecture, checked: `pnpm lint` runs dependency-cruiser with these
 * rules over every package's sources and tests (docs/architecture.md says
 * what each rule keeps and what is intended but not yet true).
 */

/**
 * The workspace packages each package's `src/` may import: the layers, read
 * from the `dependencies` and `peerDependencies` of each package.json (the
 * console's page bundles its three at build time, so they are dev ones).
 * A lower layer never imports a higher one.
 */
const LAYERS = {
  wire: [],
  "schema-value": ["wire"],
  tokens: ["wire"],
  contract: ["schema-value", "wire"],
  server: ["contract", "schema-value", "tokens", "wire"],
  client: ["contract", "schema-value", "wire"],
  "store-postgres": ["server"],
  console: ["client", "schema-value", "wire"],
  conformance: ["client", "contract", "tokens", "wire"],
  cli: ["client", "console", "contract", "schema-value", "tokens", "wire", "server", "store-postgres", "conformance"],
  "test-support": ["wire"],
  "pack-check": [],
};

/** A workspace package, whether resolved to its folder or left as the name (not built yet). */
const packagePath = (names) => `^(packages/(${names})/|@golem-stream/(${names})(/|$))`;

const layerRules = Object.entries(LAYERS).map(([name, allowed]) => {
  const others = Object.keys(LAYERS).filter((other) => other !== name && !allowed.includes(other));
  return {
    name: `layers-${name}`,
    severity: "error",
    comment: `packages/${name}/src imports only ${allowed.length === 0 ? "no workspace package" : allowed.join(", ")} (the layer order)`,
    from: { path: `^packages/${name}/src/` },
    to: { path: packagePath(others.join("|")) },
  };
});

/** Server folders that, today, import only what their role needs (the folders' direction). */
const SERVER = "^packages/server/src/";
const serverFolderRules = [
  {
    name: "server-store-is-a-leaf",
    comment: "the store contract and the SQLite store import nothing else of the server",
    from: { path: `${SERVER}store/` },
    to: { path: SERVER, pathNot: `${SERVER}store/` },
  },
  {
    name: "server-auth-is-a-leaf",
    comment: "authentication imports only the server's root modules (options, errors)",
    from: { path: `${SERVER}auth/` },
    to: { path: `${SERVER}[^/]+/`, pathNot: `${SERVER}auth/` },
  },
  {
    name: "server-cluster-below-sessions",
    comment: "cluster code (leases, peers) does not reach up into admission, attachments, invocations, sessions or the transport",
    from: { path: `${SERVER}cluster/` },
    to: { path: `${SERVER}(admission|attachment|invocation|sessions|transport|catalogue|contracts|demo|auth|testing)/` },
  },
  {
    name: "server-observability-below-sessions",
    comment: "observers see facts; they do not reach into admission, attachments, invocations, sessions or the transport",
    from: { path: `${SERVER}observability/` },
    to: { path: `${SERVER}(admission|attachment|invocation|sessions|transport|catalogue|contracts|demo|auth|testing)/` },
  },
  {
    name: "server-sessions-below-admission",
    comment:
      "the sessions in memory and the node's lifecycle (sessions/) run attachments and invocations: only the first-message rules (admission/), the transport and the server's root import them",
    from: { path: `${SERVER}(attachment|invocation|cluster|store|observability|auth|catalogue|contracts|demo)/` },
    to: { path: `${SERVER}sessions/` },
  },
  {
    name: "server-first-message-rules-on-top",
    comment:
      "the first-message rules (SessionRuntime and its start, resume and replay admission) are reached only from the transport and the server's root; below them only admission's tables and token service are imported",
    from: { path: `${SERVER}(attachment|invocation|sessions|cluster|store|observability|auth|catalogue|contracts|demo)/` },
    to: { path: `${SERVER}admission/`, pathNot: `${SERVER}admission/(principal-slots|stored-bytes|token-service|token-budget)\\.ts$` },
  },
  {
    name: "server-transport-through-its-interface",
    comment:
      "the runtime sends through the SessionTransport interface (transport/transport.ts), never the ws implementation or the connection's HTTP side",
    from: { path: `${SERVER}(admission|attachment|invocation|sessions|cluster|store|observability|auth|catalogue|contracts|demo)/` },
    to: { path: `${SERVER}transport/`, pathNot: `${SERVER}transport/transport\\.ts$` },
  },
  {
    name: "server-runtime-without-testing",
    comment: "the shipped runtime never imports the testing helpers (@golem-stream/server/testing)",
    from: { path: SERVER, pathNot: `${SERVER}testing/` },
    to: { path: `${SERVER}testing/` },
  },
  ...runtimeOrderRules(),
].map((rule) => ({ severity: "error", ...rule }));

/**
 * The runtime's order, top to bottom: the transport, the admission (first-message rules, tokens,
 * per-principal bounds), the sessions in memory, attachments, invocations, the cluster, the store.
 * No folder imports one above it; what a lower folder needs of a higher one is a port (an
 * interface it declares, the higher one implements). The `SessionTransport` interface
 * (transport/transport.ts) is the one exception, as `server-transport-through-its-interface` says.
 * The cluster and the store have stricter rules above.
 */
function runtimeOrderRules() {
  const order = ["transport", "admission", "sessions", "attachment", "invocation"];
  return order.slice(1).map((folder) => {
    const above = order.slice(0, order.indexOf(folder));
    return {
      name: `server-order-${folder}`,
      comment: `${folder}/ imports no folder above it in the runtime's order (${above.join(", ")}), but the SessionTransport interface`,
      from: { path: `${SERVER}${folder}/` },
      to: { path: `${SERVER}(${above.join("|")})/`, pathNot: `${SERVER}transport/transport\\.ts$` },
    };
  });
}

module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: "no-test-of-another-package",
      severity: "error",
      comment:
        "what several packages' tests share lives in @golem-stream/test-support: turbo does not see another package's test/ as an input",
      from: { path: "^(packages/[^/]+)/" },
      to: { path: "^packages/[^/]+/test/", pathNot: "^$1/test/" },
    },
    {
      name: "no-circular",
      severity: "error",
      comment:
        "no import cycle within a package's sources, not even of types: a port is declared where it is used, and only its implementer imports it",
      from: { path: "^packages/[^/]+/src/" },
      to: { circular: true },
    },
    ...serverFolderRules,
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)(dist|node_modules|coverage)/" },
    // Type-only imports are seen: the layer, folder and cycle rules count them.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.base.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "types", "default"],
      extensions: [".ts", ".js", ".mjs", ".d.ts"],
    },
  },
};

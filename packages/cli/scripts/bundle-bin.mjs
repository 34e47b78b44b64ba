#!/usr/bin/env node
/**
 * Bundles the `golem-stream` executable: dist/golem-stream.js (the `bin` of
 * package.json) and its lazily loaded parts in dist/chunks/, from the tsc
 * output dist/bin.js (run after `tsc`). Node 20's ESM loader costs about a
 * millisecond per file, and `invoke` alone loaded ~110 of them; the bundle
 * loads a handful (docs/protocol/cli.md, "Start-up").
 *
 * Code splitting keeps every command lazy: `--help` loads no client, `invoke`
 * no server, pino or keyring. The library entry (dist/index.js) stays the
 * plain tsc output.
 *
 * What stays outside the bundle, loaded from node_modules as before:
 * - @golem-stream/tokens: `Keyring` keeps its keys in a module-private
 *   WeakMap and is checked with `instanceof`; `serve` builds a keyring and
 *   hands it to the server, so both must share the one installed copy.
 * - @golem-stream/server, store-postgres, conformance, console: optional
 *   peers or loaded on demand (src/optional-packages.ts says how to install
 *   a missing one, which needs the real import to fail).
 * - @opentelemetry/*: optional peers, loaded only when serve exports traces
 *   (src/commands/serve-tracing.ts); the API must also be the one copy the
 *   server's spans and the SDK's diagnostics share.
 * - pino, pino-pretty: their worker-thread transports load files by path.
 * - bufferutil, utf-8-validate, better-sqlite3: native modules (ws falls
 *   back to JavaScript when the optional ones are missing).
 */
import { rm } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

export const EXTERNAL = [
  "@golem-stream/tokens",
  "@golem-stream/server",
  "@golem-stream/store-postgres",
  "@golem-stream/conformance",
  "@golem-stream/console",
  "@opentelemetry/api",
  "@opentelemetry/exporter-trace-otlp-http",
  "@opentelemetry/exporter-trace-otlp-proto",
  "@opentelemetry/resources",
  "@opentelemetry/sdk-trace",
  "pino",
  "pino-pretty",
  "bufferutil",
  "utf-8-validate",
  "better-sqlite3",
];

const packageRoot = fileURLToPath(new URL("../", import.meta.url));

// The bundled CommonJS dependencies (commander, cli-progress, ws) call `require` for Node's
// modules and for ws's optional bufferutil: an ES module has none, so each file makes one.
const REQUIRE_BANNER =
  'import { createRequire as __bundleCreateRequire } from "node:module"; const require = __bundleCreateRequire(import.meta.url);';

export async function bundleBin() {
  // Chunk names carry a content hash: remove the previous build's, or they would be packed too.
  await rm(new URL("../dist/chunks", import.meta.url), { recursive: true, force: true });
  await build({
    absWorkingDir: packageRoot,
    entryPoints: { "golem-stream": "dist/bin.js" },
    outdir: "dist",
    chunkNames: "chunks/[name]-[hash]",
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node20",
    sourcemap: true,
    sourcesContent: true,
    external: EXTERNAL,
    banner: { js: REQUIRE_BANNER },
    logLevel: "warning",
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await bundleBin();

/**
 * What @golem-stream/client costs a web page: bundles built with esbuild as
 * an application would build them (imported by name, `browser` export
 * condition, minified, tree-shaken), measured raw, gzipped (level 9) and
 * brotli-compressed. Shared by bench/browser-size.mjs (prints them) and
 * test/browser-bundle.slow.test.ts (checks the budget and that `ws` stays out).
 */
import { brotliCompressSync, constants, gzipSync } from "node:zlib";
import { build } from "esbuild";

/** What each measured bundle's entry imports. */
export const ENTRIES = {
  "createClient + browser transport": 'export { createClient, inputStream, webSocketTransport } from "@golem-stream/client";',
  "the whole browser build": 'export * from "@golem-stream/client";',
};

/** Builds one entry for `platform` ("browser" or "node") from this package's directory. */
export async function bundle(contents, platform = "browser", resolveDir = new URL("..", import.meta.url).pathname) {
  const result = await build({
    stdin: { contents, resolveDir, loader: "js" },
    bundle: true,
    format: "esm",
    platform,
    target: "es2022",
    minify: true,
    treeShaking: true,
    write: false,
    metafile: true,
    logLevel: "silent",
    ...(platform === "node" ? { external: ["ws"] } : {}),
  });
  const code = result.outputFiles[0].contents;
  const [output] = Object.values(result.metafile.outputs);
  return {
    code,
    inputs: Object.keys(result.metafile.inputs),
    /** Minified bytes each input file contributes. */
    bytesByInput: Object.fromEntries(Object.entries(output.inputs).map(([path, { bytesInOutput }]) => [path, bytesInOutput])),
    bytes: code.byteLength,
    gzip: gzipSync(code, { level: 9 }).byteLength,
    brotli: brotliCompressSync(code, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }).byteLength,
  };
}

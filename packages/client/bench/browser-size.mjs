#!/usr/bin/env node
/**
 * The size budget of @golem-stream/client in a web page:
 *
 *   node bench/browser-size.mjs        # after `pnpm build`
 *
 * Prints each bundle of bench/bundle-size.mjs (the browser build, minified)
 * raw, gzipped and brotli-compressed, with the share of each package, and the
 * Node build's whole client for comparison (`ws` left external, as Node
 * resolves it).
 */
import { ENTRIES, bundle } from "./bundle-size.mjs";

const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;

for (const [label, contents] of Object.entries(ENTRIES)) {
  const measured = await bundle(contents);
  console.log(`${label} (browser): ${kib(measured.bytes)} minified, ${kib(measured.gzip)} gzip, ${kib(measured.brotli)} brotli`);
  const byPackage = new Map();
  for (const [input, bytes] of Object.entries(measured.bytesByInput)) {
    const name = /(?:^|\/)(wire|schema-value)\/dist\//.exec(input)?.[1] ?? (/^dist\//.test(input) ? "client" : input);
    byPackage.set(name, (byPackage.get(name) ?? 0) + bytes);
  }
  console.log(
    `  minified bytes by package: ${[...byPackage]
      .filter(([, bytes]) => bytes > 0)
      .map(([name, bytes]) => `${name} ${kib(bytes)}`)
      .join(", ")}`,
  );
  const largest = Object.entries(measured.bytesByInput)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 8);
  console.log(`  largest files: ${largest.map(([input, bytes]) => `${input.replace(/^(\.\.\/)+/, "")} ${kib(bytes)}`).join(", ")}`);
  if (measured.inputs.some((input) => /node_modules\/ws\//.test(input))) console.log("  CONTAINS ws");
}
const node = await bundle(ENTRIES["the whole browser build"], "node");
console.log(`the whole Node build (node, ws external): ${kib(node.bytes)} minified, ${kib(node.gzip)} gzip`);

/**
 * A web application's bundle of the package (esbuild, `browser` export
 * condition, minified): it never contains `ws`, the Node transport or a Node
 * built-in, and `createClient` with its transport stays within the size
 * budget. The numbers themselves: `node bench/browser-size.mjs`.
 */
import { describe, expect, it } from "vitest";
// @ts-expect-error -- a plain .mjs module of the bench, shared so the test measures what the bench prints
import { ENTRIES, bundle } from "../bench/bundle-size.mjs";

interface Measured {
  readonly code: Uint8Array;
  readonly inputs: string[];
  readonly bytes: number;
  readonly gzip: number;
}
const measure = bundle as (contents: string, platform?: "browser" | "node") => Promise<Measured>;
const entries = ENTRIES as Record<string, string>;

/**
 * Gzipped bytes `createClient` + `webSocketTransport` + `inputStream` may
 * cost a page: 48 KiB (35.0 KiB when a 36 KiB budget was set; 36.2 KiB once
 * `client.connect(contract, …)`, the typed-contract entry point,
 * became a client method; 37.0 KiB once the small-item fast
 * paths (the checked input item text, schema-value's plain-string shortcuts)
 * joined, when the budget went from 37 to 38 KiB; 38.1 KiB once a cancel
 * learnt to go again on a new connection when the server does not answer it,
 * when the budget went from 38 to 39 KiB; 39.5 KiB once a typed call's
 * contract mismatch named the path and both schemas, and a failed discovery
 * its URL and cause, when it went to 40 KiB; 40.2 KiB once the canonical
 * output item shortcut (wire's decode-output-item.ts: about 2 µs less
 * client CPU per received item) joined, when it went to 41 KiB; 41.3 KiB once a
 * value stream's unacknowledged items were kept as UTF-8 in blocks
 * (pending-values.ts: a third less client CPU per small item sent), when it
 * went to 42 KiB; 42.1 KiB once f32s were written as their shortest decimal
 * at every power of two and toJs compared map keys by their canonical form,
 * when it went to 43 KiB; 45.2 KiB once the lower layers refused wrong-typed
 * arguments as internal-error and bounded their writers while writing, a
 * cancel settled when it cannot reach a method, input sources were sent in
 * turns of the event loop, and direct-binary output items were checked
 * against their element schema (protocol sections 2, 3.1 and 7: about 1 KiB
 * of it), when it went to 46 KiB; 45.9 KiB once schema-value decoded a type
 * object used at many places once (a graph built in memory) and the catalogue
 * download got its own bound, and an abort and a cut of their own, when it went
 * to 47 KiB (46.1 KiB once the browser transport, resume and takeover checked
 * their options, 47.0 KiB soon after); 47.8 KiB once wrong arguments and input
 * items were said in the caller's names with what was passed (schema-value's
 * data-path.ts) and an unknown agent type with the types there are, when it
 * went to 48 KiB; 49.0 KiB (48.6 KiB once a copied helper was shared) once a typed call's result was checked against its
 * contract, a TLS port's refusal of a plain request was recognised, a cancel
 * gave a method that does not read its input a bounded time and told a
 * success as one, and a wrong byte-source item was said by parameter and
 * index, when it went to 50 KiB; about 40% of it is
 * @golem-stream/schema-value, which validates every received value against its
 * schema as protocol section 2 requires).
 */
const BUDGET_GZIP_BYTES = 50 * 1024;

const nodeOnly = (inputs: readonly string[]): string[] =>
  inputs.filter((input) => /node_modules\/(\.pnpm\/)?ws[@/]|ws-transport\.js$|^node:/.test(input));

describe("the browser bundle", () => {
  it("createClient and its transport fit the size budget, and contain no ws, Node transport or Node built-in", async () => {
    const measured = await measure(entries["createClient + browser transport"]!);
    expect(nodeOnly(measured.inputs)).toEqual([]);
    expect(measured.inputs.some((input) => input.endsWith("web-socket-transport.js"))).toBe(true);
    expect(measured.gzip).toBeLessThanOrEqual(BUDGET_GZIP_BYTES);
  }, 60_000);

  it("the whole package imported by name has no ws either", async () => {
    const measured = await measure(entries["the whole browser build"]!);
    expect(nodeOnly(measured.inputs)).toEqual([]);
  }, 60_000);

  it("the check sees ws where it is: the Node build's bundle has the ws transport", async () => {
    const measured = await measure(entries["the whole browser build"]!, "node");
    expect(nodeOnly(measured.inputs).some((input) => input.endsWith("ws-transport.js"))).toBe(true);
  }, 60_000);
});

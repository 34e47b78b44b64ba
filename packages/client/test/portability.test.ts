/**
 * The runtime must load outside Node (browsers, Deno, Bun with a WHATWG
 * transport): only the files that are about Node itself may import a Node
 * built-in. A `node:` import — or a bare built-in name such as `"crypto"` —
 * creeping into any other file of src/ fails here, naming the file.
 */
import { readdirSync, readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../src", import.meta.url));

/** Files that may use Node built-ins, and why. */
const NODE_ONLY = new Map([
  ["ws-transport.ts", "the `ws` transport: Node's http/net types for the handshake"],
  ["ws-tls.ts", "the `ws` transport's TLS settings (node:tls, node:crypto) and its catalogue request through node:https"],
]);

const BUILTINS = new Set(builtinModules.filter((name) => !name.startsWith("_")));

/** Every module specifier of static imports/re-exports, dynamic `import()` and `require()`. */
function specifiers(source: string): string[] {
  const patterns = [
    /\bfrom\s*["']([^"']+)["']/g,
    /\bimport\s*["']([^"']+)["']/g,
    /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g,
    /\brequire\s*\(\s*["']([^"']+)["']\s*\)/g,
  ];
  return patterns.flatMap((pattern) => [...source.matchAll(pattern)].map((match) => match[1]!));
}

const isNodeBuiltin = (specifier: string): boolean => specifier.startsWith("node:") || BUILTINS.has(specifier.split("/")[0]!);

describe("portability of the runtime", () => {
  const files = readdirSync(SRC).filter((name) => name.endsWith(".ts"));

  it("finds the sources it scans, and its scanner sees a node: import", () => {
    expect(files.length).toBeGreaterThan(20);
    expect(files).toContain("ws-transport.ts");
    // The scanner itself must not be blind: the allowed file does import Node built-ins.
    expect(specifiers(readFileSync(join(SRC, "ws-transport.ts"), "utf8")).filter(isNodeBuiltin)).not.toEqual([]);
    expect(specifiers('import { randomUUID } from "node:crypto";\nconst m = await import("fs");').filter(isNodeBuiltin)).toEqual([
      "node:crypto",
      "fs",
    ]);
  });

  it("imports no Node built-in outside the files that are about Node", () => {
    const offenders = files
      .filter((name) => !NODE_ONLY.has(name))
      .flatMap((name) =>
        specifiers(readFileSync(join(SRC, name), "utf8"))
          .filter(isNodeBuiltin)
          .map((specifier) => `${name}: ${specifier}`),
      );
    expect(offenders).toEqual([]);
  });

  it("uses no Node Buffer API outside the files that are about Node (Buffer is not a global elsewhere)", () => {
    const bufferApi =
      /\bBuffer\s*\.\s*(?:from|alloc|allocUnsafe|concat|isBuffer|byteLength|compare)\b|\bnew\s+Buffer\b|\.read(?:Big)?U?Int(?:8|16|32|64)(?:BE|LE)?\(/;
    expect(bufferApi.test('const x = Buffer.from("a");')).toBe(true);
    expect(bufferApi.test("bytes.readUInt32BE(0)")).toBe(true);
    const offenders = files.filter((name) => !NODE_ONLY.has(name) && bufferApi.test(readFileSync(join(SRC, name), "utf8")));
    expect(offenders).toEqual([]);
  });
});

/**
 * The contract package is imported by both ends, browsers included: it may
 * depend on schema-value only, never on the server, the client, `ws` or Node.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const SRC = join(import.meta.dirname, "..", "src");

describe("layering", () => {
  it("imports nothing but its own files and @golem-stream/schema-value", () => {
    const imported = new Set<string>();
    const files = readdirSync(SRC, { recursive: true, encoding: "utf8" }).filter((file) => file.endsWith(".ts"));
    expect(files).toContain(join("codegen", "contract-source.ts"));
    for (const file of files) {
      const text = readFileSync(join(SRC, file), "utf8");
      for (const match of text.matchAll(/\bfrom\s+"([^"]+)"/g)) imported.add(match[1] as string);
      for (const match of text.matchAll(/\bimport\(\s*"([^"]+)"/g)) imported.add(match[1] as string);
    }
    const foreign = [...imported].filter(
      (specifier) => !specifier.startsWith("./") && !specifier.startsWith("../") && specifier !== "@golem-stream/schema-value",
    );
    expect(foreign).toEqual([]);
    expect(imported.has("@golem-stream/schema-value")).toBe(true);
  });

  it("declares only schema-value as a dependency", () => {
    const manifest = JSON.parse(readFileSync(join(SRC, "..", "package.json"), "utf8")) as { dependencies: Record<string, string> };
    expect(Object.keys(manifest.dependencies)).toEqual(["@golem-stream/schema-value"]);
  });
});

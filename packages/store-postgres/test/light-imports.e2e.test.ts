/**
 * A cluster node's store must not drag in the SQLite store or the server's WebSocket and metrics
 * runtime: `@golem-stream/store-postgres` takes what it needs from `@golem-stream/server/store`,
 * an entry with no runtime imports. Checked in a fresh process, whose module cache holds only
 * what that import loaded.
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const PACKAGE_FOLDER = fileURLToPath(new URL("..", import.meta.url));

/** The CommonJS modules matching `pattern` that importing `specifier` loads (native and CJS dependencies are CommonJS). */
function loadedBy(specifier: string, pattern: RegExp): string[] {
  const script = `
    import { createRequire } from "node:module";
    await import(${JSON.stringify(specifier)});
    const cache = createRequire(import.meta.url).cache;
    console.log(JSON.stringify(Object.keys(cache).filter((path) => ${pattern.toString()}.test(path))));
  `;
  const output = execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: PACKAGE_FOLDER, encoding: "utf8" });
  return JSON.parse(output) as string[];
}

const HEAVY = /[\\/]node_modules[\\/](better-sqlite3|ws|prom-client)[\\/]/;

describe("importing the PostgreSQL store", () => {
  it("loads neither better-sqlite3 nor ws nor prom-client", () => {
    expect(loadedBy("@golem-stream/store-postgres", HEAVY)).toEqual([]);
  });

  it("would notice them: the server's main entry loads ws and prom-client (SQLite only when a SQLite store opens)", () => {
    const names = new Set(loadedBy("@golem-stream/server", HEAVY).map((path) => HEAVY.exec(path)?.[1]));
    expect([...names].sort()).toEqual(["prom-client", "ws"]);
  });
});

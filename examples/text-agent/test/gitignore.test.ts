/**
 * The project is the one to copy for agents of your own, so what its tests and tools write
 * (vitest's JSON reports, blobs and coverage, the build, the server's state) stays out of a
 * repository made from it: its .gitignore names each, read here with the subset of the rules it
 * uses (a folder's name, `*` within a name, `*.ext` for files).
 */
import { readFileSync } from "node:fs";
import { expect, it } from "vitest";

const patterns = readFileSync(new URL("../.gitignore", import.meta.url), "utf8")
  .split("\n")
  .map((line) => line.trim())
  .filter((line) => line !== "" && !line.startsWith("#"));

/** Whether a pattern of the .gitignore ignores `path` (relative to the project, `/`-separated). */
function ignored(path: string): boolean {
  const parts = path.split("/");
  return patterns.some((pattern) => {
    const folder = pattern.endsWith("/");
    const name = new RegExp(
      `^${pattern
        .replace(/\/$/, "")
        .replace(/[.+?^${}()|[\]\\]/g, "\\$&")
        .replaceAll("*", "[^/]*")}$`,
    );
    // A folder pattern matches any folder on the way; any other pattern the file's own name too.
    return (folder ? parts.slice(0, -1) : parts).some((part) => name.test(part));
  });
}

it.each([
  "test-results/unit.json",
  "test-results-loop/unit.json",
  ".vitest-reports/unit.json",
  "coverage/index.html",
  "dist/agents.js",
  "node_modules/.bin/golem-stream",
  ".data/sessions.db",
  ".turbo/turbo-build.log",
  "tsconfig.tsbuildinfo",
])("ignores %s", (path) => {
  expect(ignored(path)).toBe(true);
});

it.each(["src/agents.ts", "test/text.test.ts", "package.json", "README.md"])("keeps %s", (path) => {
  expect(ignored(path)).toBe(false);
});

/**
 * The process tests run the `golem-stream` executable, the bundle
 * dist/golem-stream.js (scripts/bundle-bin.mjs), so it must be the code under
 * test: when any source is newer than the oldest compiled file (`npx vitest`
 * right after an edit), compile the package here first; when the bundle is
 * older than what it inlines (this package's tsc output, or the dist/ of a
 * workspace package it depends on, rebuilt since), bundle again.
 *
 * Only then. `pnpm test` builds the package before its tests (turbo), and
 * recompiling anyway rewrote `dist/` while other tasks read it: pack-check
 * packs this package's `dist/` into a tarball at the same time, and once
 * packed a half-written `io/progress-line.js` (CI: "does not provide an
 * export named 'describeProgress'").
 *
 * It also makes the run's scratch root, handed to the test files as
 * `inject("cliScratchRoot")`, and its teardown removes it, killing what the
 * tests left running there (scratch-root.ts).
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { TestProject } from "vitest/node";
import { createScratchRoot, removeScratchRoot, sweepStaleScratchRoots } from "./scratch-root.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The run's scratch root (scratch-root.ts). */
    cliScratchRoot: string;
  }
}

/** The bundle's files in dist/: the entry (and its map) and the chunks folder. */
const BUNDLE_ENTRY = "golem-stream.js";
const isBundleFile = (relative: string): boolean => relative.startsWith(BUNDLE_ENTRY) || relative.startsWith("chunks");

/** The modification times of the files below `dir` (none if it does not exist), optionally only those `keep` accepts (by path relative to `dir`). */
function mtimes(dir: string, keep: (relative: string) => boolean = () => true): number[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .filter((path) => keep(path.slice(dir.length + 1)))
    .map((path) => statSync(path).mtimeMs);
}

/** Whether every compiled file is newer than every source, the compiler settings and the bundle script. */
export function isBuilt(packageRoot: string): boolean {
  const compiled = mtimes(join(packageRoot, "dist"));
  if (compiled.length === 0) return false;
  const sources = [
    ...mtimes(join(packageRoot, "src")),
    ...mtimes(join(packageRoot, "scripts")),
    statSync(join(packageRoot, "tsconfig.json")).mtimeMs,
  ];
  return Math.max(...sources) < Math.min(...compiled);
}

/** Whether the bundle exists and is newer than this package's tsc output and the dist/ of each workspace package it depends on. */
export function isBundled(packageRoot: string): boolean {
  const bundle = mtimes(join(packageRoot, "dist"), isBundleFile);
  if (!existsSync(join(packageRoot, "dist", BUNDLE_ENTRY))) return false;
  const manifest = JSON.parse(readFileSync(join(packageRoot, "package.json"), "utf8")) as { dependencies?: Record<string, string> };
  const workspaceDependencies = Object.keys(manifest.dependencies ?? {})
    .filter((name) => name.startsWith("@golem-stream/"))
    .map((name) => join(packageRoot, "..", name.slice("@golem-stream/".length), "dist"));
  const inputs = [
    ...mtimes(join(packageRoot, "dist"), (relative) => !isBundleFile(relative)),
    ...workspaceDependencies.flatMap((dir) => mtimes(dir)),
  ];
  return Math.max(...inputs) < Math.min(...bundle);
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  await sweepStaleScratchRoots();
  const packageRoot = fileURLToPath(new URL("../../", import.meta.url));
  if (!isBuilt(packageRoot)) {
    const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
    execFileSync(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: packageRoot, stdio: "inherit" });
  }
  if (!isBundled(packageRoot)) execFileSync(process.execPath, ["scripts/bundle-bin.mjs"], { cwd: packageRoot, stdio: "inherit" });
  const scratchRoot = createScratchRoot();
  project.provide("cliScratchRoot", scratchRoot);
  return () => removeScratchRoot(scratchRoot);
}

/**
 * The process tests run `dist/bin.js`, so `dist/` must be the code under
 * test: when any source is newer than the oldest compiled file (`npx vitest`
 * right after an edit), compile the package here first.
 *
 * Only then. `pnpm test` builds the package before its tests (turbo), and
 * recompiling anyway rewrote `dist/` while other tasks read it: pack-check
 * packs this package's `dist/` into a tarball at the same time, and once
 * packed a half-written `io/progress-line.js` (CI: "does not provide an
 * export named 'describeProgress'").
 */
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The modification times of the files below `dir` (none if it does not exist). */
function mtimes(dir: string): number[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => statSync(join(entry.parentPath, entry.name)).mtimeMs);
}

/** Whether every compiled file is newer than every source and the compiler settings. */
export function isBuilt(packageRoot: string): boolean {
  const compiled = mtimes(join(packageRoot, "dist"));
  if (compiled.length === 0) return false;
  const sources = [...mtimes(join(packageRoot, "src")), statSync(join(packageRoot, "tsconfig.json")).mtimeMs];
  return Math.max(...sources) < Math.min(...compiled);
}

export default function setup(): void {
  const packageRoot = fileURLToPath(new URL("../../", import.meta.url));
  if (isBuilt(packageRoot)) return;
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  execFileSync(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: packageRoot, stdio: "inherit" });
}

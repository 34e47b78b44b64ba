/**
 * The process tests run `dist/bin.js`. The workspace's `test` task only
 * builds this package's dependencies first, so compile the package here:
 * tests then always run the code they are testing, on a fresh checkout too.
 */
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

export default function setup(): void {
  const packageRoot = fileURLToPath(new URL("../../", import.meta.url));
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  execFileSync(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: packageRoot, stdio: "inherit" });
}

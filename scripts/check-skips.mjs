#!/usr/bin/env node
/**
 * Fails when a test was skipped that `.ci/allowed-skips.json` does not list.
 * A skip passes silently in vitest's totals: a service that could not start,
 * a flag that was not passed or a runtime without a global can turn a whole
 * suite into skips and a green run. Reads the JSON reports `pnpm test` writes
 * to `packages/<name>/test-results/*.json` and `examples/<name>/test-results/*.json`
 * (scripts/run-tests.sh).
 *
 * An allow-list entry: `{ "file": "packages/x/test/y.test.ts", "test": "full name", "reason": "why" }`.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(fileURLToPath(import.meta.url), "..", "..");
const allowed = JSON.parse(readFileSync(join(root, ".ci", "allowed-skips.json"), "utf8"));
const isAllowed = (file, test) => allowed.some((entry) => entry.file === file && entry.test === test);

let reports = 0;
const unexpected = [];
// The example projects (examples/*) are workspace packages whose tests `pnpm test` runs too.
const packageDirs = ["packages", "examples"].flatMap((parent) =>
  existsSync(join(root, parent)) ? readdirSync(join(root, parent)).map((pkg) => join(root, parent, pkg)) : [],
);
for (const pkgDir of packageDirs) {
  const dir = join(pkgDir, "test-results");
  if (!existsSync(dir)) continue;
  for (const name of readdirSync(dir).filter((n) => n.endsWith(".json"))) {
    reports++;
    const report = JSON.parse(readFileSync(join(dir, name), "utf8"));
    for (const file of report.testResults ?? []) {
      const path = relative(root, file.name);
      for (const test of file.assertionResults ?? []) {
        if (test.status === "passed" || test.status === "failed") continue;
        if (!isAllowed(path, test.fullName)) unexpected.push(`${path} › ${test.fullName} (${test.status})`);
      }
    }
  }
}
if (reports === 0) {
  console.error("check-skips: no test reports found under packages/*/test-results/ or examples/*/test-results/");
  process.exit(1);
}
if (unexpected.length > 0) {
  console.error(`check-skips: ${unexpected.length} test(s) skipped that .ci/allowed-skips.json does not allow:`);
  for (const line of unexpected) console.error(`  ${line}`);
  process.exit(1);
}
console.log(`check-skips: ${reports} reports, no unexpected skip`);

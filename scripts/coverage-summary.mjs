#!/usr/bin/env node
/**
 * Prints one table of every package's coverage, from the summaries `pnpm test` leaves in
 * `packages/<name>/coverage/coverage-summary.json` (scripts/run-tests.sh): what the unit and
 * end-to-end tests covered together, in % of the package's `src/`. Each package's thresholds,
 * checked by `test:coverage`, are in its vitest.config.ts; `coverage/index.html` shows the lines.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(fileURLToPath(import.meta.url), "..", "..");
const metrics = ["lines", "functions", "branches", "statements"];
const rows = [];
for (const pkg of readdirSync(join(root, "packages")).sort()) {
  const file = join(root, "packages", pkg, "coverage", "coverage-summary.json");
  if (!existsSync(file)) continue;
  const { total } = JSON.parse(readFileSync(file, "utf8"));
  rows.push([pkg, ...metrics.map((m) => `${total[m].pct.toFixed(2)}%`)]);
}
if (rows.length === 0) {
  console.log("coverage: no package wrote coverage/coverage-summary.json");
} else {
  const table = [["coverage", ...metrics], ...rows];
  const widths = table[0].map((_, i) => Math.max(...table.map((row) => row[i].length)));
  for (const row of table) console.log(row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join("  "));
}

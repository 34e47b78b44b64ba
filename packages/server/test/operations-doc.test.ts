/**
 * docs/operations.md's tables stay in step with the code: an operator alerts
 * and searches on what they list, so an event or a label value the code
 * gained and the page lacks goes unwatched, and one the page lists but
 * nothing emits is watched in vain. The sources are read as text: every
 * `event: "…"` literal of the server, the CLI and the PostgreSQL store is a
 * log event, but for the few listed below with why. The metrics are read from
 * a registry `PrometheusMetrics` fills, and each closed label's values from
 * the union type `server-observer.ts` declares for it.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Registry } from "prom-client";
import { expect, it } from "vitest";
import { PrometheusMetrics } from "../src/observability/prometheus-metrics.js";

const ROOT = join(import.meta.dirname, "..", "..", "..");
const DOC = readFileSync(join(ROOT, "docs", "operations.md"), "utf8");
const SOURCES = ["packages/server/src", "packages/cli/src", "packages/store-postgres/src"];

/**
 * `event` keys that are no log event, each with where it belongs: they are
 * checked to be still used, so that the list cannot outlive its reason.
 */
const NOT_LOG_EVENTS: Readonly<Record<string, string>> = {
  // The stored output events' kinds (`OutputEvent` of the session store); `item` is an
  // `invoke --output json` line too.
  item: "packages/server/src packages/store-postgres/src packages/cli/src/output",
  terminal: "packages/server/src packages/store-postgres/src",
  // `golem-stream invoke --output json` lines (packages/cli/README.md), not log lines.
  accepted: "packages/cli/src/output",
  reconnecting: "packages/cli/src/output",
  failed: "packages/cli/src/output",
  result: "packages/cli/src/output",
  finished: "packages/cli/src/output",
  end: "packages/cli/src/output",
  bytes: "packages/cli/src/output",
  blob: "packages/cli/src/output",
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => join(entry.parentPath, entry.name));
}

/** Every `event: "…"` literal, and the files (relative to the root) that hold it. */
function eventLiterals(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const source of SOURCES) {
    for (const file of sourceFiles(join(ROOT, source))) {
      for (const match of readFileSync(file, "utf8").matchAll(/\bevent: "([^"]+)"/g)) {
        const files = found.get(match[1]!) ?? [];
        files.push(file.slice(ROOT.length + 1));
        found.set(match[1]!, files);
      }
    }
  }
  return found;
}

/** The rows of the tables of the section `heading`: each row's cells. */
function tableRows(heading: string): string[][] {
  const start = DOC.indexOf(`\n## ${heading}\n`);
  expect(start, heading).toBeGreaterThanOrEqual(0);
  const end = DOC.indexOf("\n## ", start + 1);
  return DOC.slice(start, end < 0 ? undefined : end)
    .split("\n")
    .filter((line) => line.startsWith("| `"))
    .map((line) => line.slice(1, -1).split(" | "));
}

const backticked = (cell: string): string[] => [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1]!);

it("every log event emitted is in a table of docs/operations.md, Logs, and every event there is emitted", () => {
  const literals = eventLiterals();
  for (const [event, where] of Object.entries(NOT_LOG_EVENTS)) {
    const files = literals.get(event) ?? [];
    expect(files.length, `event: "${event}" is no longer used: drop it from NOT_LOG_EVENTS`).toBeGreaterThan(0);
    for (const file of files)
      expect(
        where.split(" ").some((dir) => file.startsWith(`${dir}/`)),
        `event: "${event}" in ${file}`,
      ).toBe(true);
  }
  const emitted = [...literals.keys()].filter((event) => !(event in NOT_LOG_EVENTS)).sort();
  const documented = tableRows("Logs")
    .map((cells) => backticked(cells[0]!)[0]!)
    .filter((event) => event !== "event")
    .sort();
  expect(new Set(documented).size, "an event listed twice").toBe(documented.length);
  expect(
    emitted.filter((event) => !documented.includes(event)),
    "emitted, not in docs/operations.md",
  ).toEqual([]);
  expect(
    documented.filter((event) => !emitted.includes(event)),
    "in docs/operations.md, emitted nowhere",
  ).toEqual([]);
});

/** The members of the string union `type NAME = "a" | "b" …` in server-observer.ts. */
function unionMembers(name: string): string[] {
  const source = readFileSync(join(ROOT, "packages/server/src/observability/server-observer.ts"), "utf8");
  const start = source.indexOf(`export type ${name} =`);
  expect(start, name).toBeGreaterThanOrEqual(0);
  const body = source.slice(start, source.indexOf(";", start)).replace(/\/\*\*[\s\S]*?\*\//g, "");
  return [...body.matchAll(/"([^"]+)"/g)].map((match) => match[1]!);
}

it("every metric is in the table of docs/operations.md, Metrics, with its labels and each closed label's values", async () => {
  const registry = new Registry();
  new PrometheusMetrics({ registry }).watchNodeBudget(() => ({ held: 0, capacity: 1 }));
  const metrics = (await registry.getMetricsAsJSON()).map((metric) => ({
    name: metric.name.replace(/^golem_stream_/, ""),
    labels: [...((metric as { labelNames?: string[] }).labelNames ?? [])].sort(),
  }));
  const rows = new Map(tableRows("Metrics").map((cells) => [backticked(cells[0]!)[0]!, cells]));
  expect(metrics.map((metric) => metric.name).sort()).toEqual([...rows.keys()].filter((name) => name !== "metric").sort());

  for (const { name, labels } of metrics) {
    const cell = rows.get(name)![2]!;
    // A label is named as `label`: (or alone, when the row says the same as another's).
    const named = labels.filter((label: string) => cell.includes(`\`${label}\``));
    expect(named, `labels of ${name}`).toEqual(labels);
  }

  const closed: [metric: string, type: string][] = [
    ["attachments_total", "AttachOperation"],
    ["attachment_rejections_total", "RejectedOperation"],
    ["backpressure_pauses_total", "BackpressureReason"],
    ["connections_silent_total", "SilenceReason"],
    ["principal_limit_refusals_total", "PrincipalLimit"],
  ];
  for (const [metric, type] of closed) {
    const cell = rows.get(metric)![2]!;
    const values = unionMembers(type);
    expect(values.length, type).toBeGreaterThan(0);
    expect(
      values.filter((value) => !backticked(cell).includes(value)),
      `values of ${type} missing from ${metric}`,
    ).toEqual([]);
  }
});

/** The human-readable report: one line per check, details under each failure. */
import type { BaseReport, CheckResult } from "../run-checks.js";

const MARK = { passed: "PASS", failed: "FAIL", skipped: "SKIP" } as const;

export function formatResultLine(result: CheckResult): string {
  const head = `${MARK[result.status]}  ${result.id}  [${result.ref}]  ${result.durationMs} ms`;
  if (result.status !== "failed") return head;
  return `${head}\n      expected: ${result.expectation}\n      saw:      ${result.saw}`;
}

export function formatTextReport(report: BaseReport): string {
  const lines: string[] = [`Golem Stream Session v1 ${report.suite} conformance — ${report.target}`, ""];
  let section = "";
  for (const result of report.results) {
    if (result.section !== section) {
      section = result.section;
      lines.push(`${section}`);
    }
    lines.push(`  ${formatResultLine(result).replaceAll("\n", "\n  ")}`);
  }
  lines.push(
    "",
    `${report.results.length} checks: ${report.passed} passed, ${report.failed} failed, ${report.skipped} skipped in ${(report.durationMs / 1000).toFixed(1)} s`,
  );
  return lines.join("\n");
}

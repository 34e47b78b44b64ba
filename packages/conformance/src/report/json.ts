/** The machine-readable report (`--json`): stable member names, one object per check. */
import type { SuiteReport } from "../runner.js";

export function formatJsonReport(report: SuiteReport): string {
  return JSON.stringify(
    {
      suite: "golem-stream-session-v1/server",
      url: report.url,
      summary: { total: report.results.length, passed: report.passed, failed: report.failed, skipped: report.skipped, durationMs: report.durationMs },
      results: report.results,
    },
    null,
    2,
  );
}

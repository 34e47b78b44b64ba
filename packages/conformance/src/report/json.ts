/** The machine-readable report (`--json`): stable member names, one object per check. */
import type { BaseReport } from "../run-checks.js";

/** `url` for the server suite, `adapter` for the client suite: what was under test. */
export function formatJsonReport(report: BaseReport): string {
  return JSON.stringify(
    {
      suite: `golem-stream-session-v1/${report.suite}`,
      [report.suite === "server" ? "url" : "adapter"]: report.target,
      summary: {
        total: report.results.length,
        passed: report.passed,
        failed: report.failed,
        skipped: report.skipped,
        durationMs: report.durationMs,
      },
      results: report.results,
    },
    null,
    2,
  );
}

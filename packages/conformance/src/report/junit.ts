/** JUnit XML (`--junit FILE`) for CI systems: one testsuite per section, one testcase per check. */
import type { BaseReport } from "../run-checks.js";

function escapeXml(text: string): string {
  // XML 1.0 cannot carry most control characters even escaped: they are replaced.
  return text
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, "\ufffd")
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&apos;");
}

export function formatJunitReport(report: BaseReport): string {
  const sections = [...new Set(report.results.map((r) => r.section))];
  const out = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="golem-stream-session-v1 ${report.suite} conformance" tests="${report.results.length}" failures="${report.failed}" skipped="${report.skipped}" time="${(report.durationMs / 1000).toFixed(3)}">`,
  ];
  for (const section of sections) {
    const results = report.results.filter((r) => r.section === section);
    const time = results.reduce((sum, r) => sum + r.durationMs, 0) / 1000;
    out.push(
      `  <testsuite name="${escapeXml(section)}" tests="${results.length}" failures="${results.filter((r) => r.status === "failed").length}" skipped="${results.filter((r) => r.status === "skipped").length}" time="${time.toFixed(3)}">`,
    );
    for (const r of results) {
      const open = `    <testcase classname="${escapeXml(section)}" name="${escapeXml(r.id)}" time="${(r.durationMs / 1000).toFixed(3)}"`;
      if (r.status === "passed") out.push(`${open}/>`);
      else if (r.status === "skipped") out.push(`${open}><skipped message="${escapeXml(r.saw)}"/></testcase>`);
      else
        out.push(
          `${open}><failure message="${escapeXml(r.saw)}">${escapeXml(`${r.ref}\nexpected: ${r.expectation}\nsaw: ${r.saw}`)}</failure></testcase>`,
        );
    }
    out.push("  </testsuite>");
  }
  out.push("</testsuites>", "");
  return out.join("\n");
}

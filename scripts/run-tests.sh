#!/usr/bin/env bash
# `pnpm test`: the unit tests (in memory, no sockets, processes or services)
# two packages at a time, then the end-to-end tests (real sockets, processes,
# PostgreSQL, Chromium) one package at a time: on a two-core machine, every
# package's tests at once made timing-sensitive scenarios starve, and a unit
# property test over 8 MiB values ran five times slower. Within a package,
# two end-to-end files run at once (vitest's default on two cores is one):
# they mostly wait on the processes, sockets and databases they start, and
# one at a time left a core idle (this phase took 13 min in CI, 8.4 with
# two: docs/testing.md). `--continue` keeps every package's result when one
# fails, and the second phase runs whatever the first found. Last, each
# package's coverage.
set -uo pipefail
cd "$(dirname "$0")/.."
# Each package also writes a JSON report to test-results/ (scripts/check-skips.mjs reads them).
report() { echo "--reporter=default --reporter=json --outputFile.json=test-results/$1.json"; }
# Coverage is recorded in both phases and judged once, on what they covered together: a
# package's unit tests reach its pure modules, its end-to-end tests the sockets and processes.
# Each phase records what it covered into a blob (.vitest-reports/<phase>.json) and writes its
# own numbers to coverage/<phase>/coverage-summary.json, without printing them or checking
# thresholds (the zeros below): a phase alone covers less than the package's threshold.
# `test:coverage` then merges a package's blobs, prints its summary and checks its thresholds.
collect() {
  echo "--coverage.enabled --coverage.reportOnFailure --coverage.reporter=json-summary --coverage.reportsDirectory=coverage/$1" \
    "--coverage.thresholds.lines=0 --coverage.thresholds.functions=0" \
    "--coverage.thresholds.branches=0 --coverage.thresholds.statements=0" \
    "--reporter=blob --outputFile.blob=.vitest-reports/$1.json"
}
rm -rf {packages,examples}/*/{test-results,.vitest-reports,coverage}
status=0
# shellcheck disable=SC2046
turbo run test:unit --concurrency=2 --continue "$@" -- $(report unit) $(collect unit) || status=$?
# shellcheck disable=SC2046
turbo run test:e2e --concurrency=1 --continue "$@" -- --maxWorkers=2 $(report e2e) $(collect e2e) || status=$?
turbo run test:coverage --continue "$@" || status=$?
node scripts/coverage-summary.mjs
exit "$status"

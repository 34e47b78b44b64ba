#!/usr/bin/env bash
# `pnpm test`: the unit tests of every package at once (in memory, no
# sockets, processes or services), then the end-to-end tests one package at a
# time (real sockets, processes, PostgreSQL, Chromium): on a two-core machine,
# six packages' end-to-end tests at once made timing-sensitive scenarios
# starve. `--continue` keeps every package's result when one fails, and the
# second phase runs whatever the first found.
set -uo pipefail
cd "$(dirname "$0")/.."
# Each package also writes a JSON report to test-results/ (scripts/check-skips.mjs reads them).
report() { echo "--reporter=default --reporter=json --outputFile.json=test-results/$1.json"; }
rm -rf packages/*/test-results
status=0
# shellcheck disable=SC2046
turbo run test:unit --continue "$@" -- $(report unit) || status=$?
# shellcheck disable=SC2046
turbo run test:e2e --concurrency=1 --continue "$@" -- $(report e2e) || status=$?
exit "$status"

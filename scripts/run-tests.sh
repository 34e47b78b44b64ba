#!/usr/bin/env bash
# `pnpm test`: the unit tests (in memory, no sockets, processes or services)
# two packages at a time, then the end-to-end tests (real sockets, processes,
# PostgreSQL, Chromium) one package at a time: on a two-core machine, every
# package's tests at once made timing-sensitive scenarios starve, and a unit
# property test over 8 MiB values ran five times slower. `--continue` keeps every package's result when one fails, and the
# second phase runs whatever the first found.
set -uo pipefail
cd "$(dirname "$0")/.."
# Each package also writes a JSON report to test-results/ (scripts/check-skips.mjs reads them).
report() { echo "--reporter=default --reporter=json --outputFile.json=test-results/$1.json"; }
rm -rf packages/*/test-results
status=0
# shellcheck disable=SC2046
turbo run test:unit --concurrency=2 --continue "$@" -- $(report unit) || status=$?
# shellcheck disable=SC2046
turbo run test:e2e --concurrency=1 --continue "$@" -- $(report e2e) || status=$?
exit "$status"

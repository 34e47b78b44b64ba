#!/usr/bin/env bash
# `pnpm lint`: tsc in every package (turbo, after the package's own build: end-to-end tests
# import its dist/, which a build empties first; this script's arguments go to it), then ESLint
# (eslint.config.mjs) and dependency-cruiser (.dependency-cruiser.cjs) over every package's
# sources and tests, Prettier's check of the formatting (.prettierrc.json; `pnpm format`
# rewrites), and the length of source files (scripts/check-file-size.mjs). Each runs even when
# one before it failed, so one run reports everything.
# Alone: `pnpm lint:eslint`, `pnpm lint:deps`, `pnpm format:check`.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
turbo run lint "$@" || status=$?
pnpm run lint:eslint || status=$?
pnpm run lint:deps || status=$?
pnpm run format:check || status=$?
node scripts/check-file-size.mjs || status=$?
exit "$status"

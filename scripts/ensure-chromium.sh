#!/usr/bin/env bash
# Run by `pnpm test` (the README's test command) and by .ci/run: the browser
# tests drive Debian's Chromium through playwright-core, which never downloads
# a browser, so install the `chromium` package when it is missing. When that is
# not possible (no apt, no root or sudo) say so and go on: those tests then
# fail, naming the reason. CHROMIUM_PATH points the tests at another browser.
set -uo pipefail
if [ -n "${CHROMIUM_PATH:-}" ] || command -v chromium >/dev/null 2>&1; then exit 0; fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "ensure-chromium: chromium is missing and this user cannot install it (not root, no sudo); the browser tests will fail" >&2
    exit 0
  fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-chromium: chromium is missing and there is no apt-get here; install Chromium or set CHROMIUM_PATH, or the browser tests will fail" >&2
  exit 0
fi
echo "ensure-chromium: installing Debian's chromium for the browser tests (apt-get install chromium)" >&2
$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null ||
  echo "ensure-chromium: apt-get install chromium failed; the browser tests will fail" >&2
exit 0

#!/usr/bin/env bash
# Run by `pnpm test` (the README's test command) and by .ci/run: two kinds of
# tests drive programs that npm does not ship, so install Debian's packages
# for them when they are missing:
# - chromium: the browser tests drive it through playwright-core, which never
#   downloads a browser (CHROMIUM_PATH points them at another one);
# - postgresql: the CLI's `serve --log-compression` test needs a PostgreSQL
#   built with lz4, which the embedded one is not (GOLEM_STREAM_PG_URL points
#   it at another server). No cluster is created and no server is started: the
#   test starts its own in its scratch directory.
# When installing is not possible (no apt, no root or sudo) say so and go on:
# those tests then fail, naming the reason.
set -uo pipefail
missing=()
if [ -z "${CHROMIUM_PATH:-}" ] && ! command -v chromium >/dev/null 2>&1; then missing+=(chromium); fi
if [ -z "${GOLEM_STREAM_PG_URL:-}" ] && ! compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null; then missing+=(postgresql); fi
if [ "${#missing[@]}" -eq 0 ]; then exit 0; fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "ensure-test-packages: ${missing[*]} missing and this user cannot install them (not root, no sudo); the tests that need them will fail" >&2
    exit 0
  fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-test-packages: ${missing[*]} missing and there is no apt-get here; install them (or set CHROMIUM_PATH / GOLEM_STREAM_PG_URL), or the tests that need them will fail" >&2
  exit 0
fi
if [[ " ${missing[*]} " == *" postgresql "* ]] && [ ! -e /etc/postgresql-common/createcluster.conf ]; then
  # Debian's package would otherwise create and start a cluster on port 5432 nobody uses.
  $sudo mkdir -p /etc/postgresql-common && echo "create_main_cluster = false" | $sudo tee /etc/postgresql-common/createcluster.conf >/dev/null
fi
echo "ensure-test-packages: installing Debian's ${missing[*]} for the tests (apt-get install)" >&2
$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
  echo "ensure-test-packages: apt-get install ${missing[*]} failed; the tests that need them will fail" >&2
exit 0

#!/usr/bin/env bash
# System packages the annotation app's tests need (tests/test_app_browser*.py, tests/app/test_app_load.py,
# tests/app/test_app_proxy.py): Debian's chromium (driven headless by Playwright, no browser download),
# PostgreSQL (a throwaway cluster started by the tests) and nginx (the reverse proxy of docs/app.md's
# deployment recipe, started by the test on a loopback port with its own config). Idempotent: a rerun
# with all present returns at once.
# Python packages come from pyproject.toml (`pip install -e '.[test]'`: playwright, psycopg, ...).
set -euo pipefail

need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  need+=(postgresql)
fi
[ -x /usr/sbin/nginx ] || need+=(nginx)
# fonts for legible screenshots (chromium pulls some in; make sure of one)
[ -d /usr/share/fonts/truetype/dejavu ] || need+=(fonts-dejavu-core)

if [ ${#need[@]} -eq 0 ]; then
  echo "app test deps: chromium, postgresql and nginx already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# Debian's packages start their services on install (nginx on port 80, a postgresql `main` cluster); the
# tests start their own. Where no policy-rc.d forbids it already (containers usually have one), one does
# for the install.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
  $SUDO chmod 755 "$policy"
  trap '$SUDO rm -f "$policy"' EXIT
fi
echo "app test deps: installing ${need[*]}"
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
echo "app test deps: done"

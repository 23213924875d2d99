#!/usr/bin/env bash
# System packages the annotation app's tests need (tests/test_app_browser.py, tests/test_app_load.py):
# Debian's chromium (driven headless by Playwright, no browser download) and PostgreSQL (a throwaway
# cluster started by the tests). Idempotent: a rerun with both present returns at once.
# Python packages come from pyproject.toml (`pip install -e '.[test]'`: playwright, psycopg, ...).
set -euo pipefail

need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  need+=(postgresql)
fi
# fonts for legible screenshots (chromium pulls some in; make sure of one)
[ -d /usr/share/fonts/truetype/dejavu ] || need+=(fonts-dejavu-core)

if [ ${#need[@]} -eq 0 ]; then
  echo "app test deps: chromium and postgresql already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
echo "app test deps: installing ${need[*]}"
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# Debian's postgresql package may create and start a `main` cluster; the tests start their own.
echo "app test deps: done"

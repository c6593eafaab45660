#!/usr/bin/env bash
# Set up, then lint and run the whole test suite. Extra arguments go to pytest.
# Uses the PostgreSQL server at LEDGER_DATABASE_URL when set, an embedded one otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

# The audit report's test renders the report in Debian's Chromium (tests/audit/test_report.py)
# and fails without it: install it on a fresh machine (as root, or through sudo).
chromium=/usr/bin/chromium
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo -n "$@"; fi
}
if [ ! -x "$chromium" ]; then
  echo "test: $chromium is missing; installing Debian's chromium package"
  if [ "$(id -u)" -ne 0 ] && ! { command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; }; then
    echo "test: cannot install chromium: not root and no password-less sudo;" \
      "install it with 'apt-get install chromium' and run again" >&2
    exit 1
  fi
  if ! command -v apt-get >/dev/null 2>&1 \
      || ! as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq \
      || ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium \
      || [ ! -x "$chromium" ]; then
    echo "test: installing Debian's chromium package failed; the report's browser test needs" \
      "$chromium (apt-get install chromium)" >&2
    exit 1
  fi
fi
.venv/bin/ruff check .
# pytest exits 5 when it collects no test; `set -e` turns that into a failure, as it must.
# --durations: the 25 slowest tests close every run, so the suite's time is watched where it goes.
# --numprocesses: one worker per core (at most four), each taking whole test files (loadfile), so
# a module's fixtures are made once; the suite mostly waits on Spark, Airflow and PostgreSQL.
exec .venv/bin/python -m pytest --durations=25 --numprocesses=auto --maxprocesses=4 \
  --dist=loadfile "$@"

#!/usr/bin/env bash
# Set up, then lint and run the whole test suite. Extra arguments go to pytest.
# Uses the PostgreSQL server at LEDGER_DATABASE_URL when set, an embedded one otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
# pytest exits 5 when it collects no test; `set -e` turns that into a failure, as it must.
exec .venv/bin/python -m pytest "$@"

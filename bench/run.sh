#!/usr/bin/env bash
# Set up, then run the benchmark (bench/run.py); arguments go to it, e.g. --sizes 10000,100000.
# Uses the PostgreSQL server of LEDGER_DATABASE_URL when set, an embedded one otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m bench.run "$@"

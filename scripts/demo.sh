#!/usr/bin/env bash
# Set up, then run the demo: sample events -> Spark micro-batches -> PostgreSQL -> audits.
# Extra arguments go to `ledger demo` (e.g. --events 100000).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/ledger demo "$@"

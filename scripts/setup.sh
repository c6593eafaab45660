#!/usr/bin/env bash
# Set up a development environment from nothing but Python 3.11 and Java 17:
# a virtualenv in .venv with the project installed (editable) at the pinned versions of
# constraints.txt. Safe to run again; it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

python_bin="${PYTHON:-}"
if [ -z "$python_bin" ]; then
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1; then python_bin="$candidate"; break; fi
  done
fi
if [ -z "$python_bin" ] || ! "$python_bin" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
  echo "setup: Python 3.11 is required (set PYTHON=/path/to/python3.11)" >&2
  exit 1
fi
if ! command -v java >/dev/null 2>&1; then
  echo "setup: Java 17 is required by Spark (install a JDK 17 and put java on PATH)" >&2
  exit 1
fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $python_bin"
  "$python_bin" -m venv .venv
fi
if ! .venv/bin/python -m pip install --quiet --disable-pip-version-check \
    --constraint constraints.txt --editable ".[dev]"; then
  echo "setup: installing the project failed" >&2
  exit 1
fi
# Building the editable install leaves a copy of the project's metadata here
# (ledger_engine.egg-info); the installed one is in .venv. Python run from here (`python -m`
# puts this folder on sys.path) would see the distribution twice, and Airflow would load its
# plugin twice and show the second as a plugin import error.
rm -rf ledger_engine.egg-info
echo "setup: ready (.venv/bin/ledger, .venv/bin/pytest)"

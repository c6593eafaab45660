"""`python -m ledger_engine.cli`: the `ledger` command, as tests and benchmarks run it."""

import sys

from ledger_engine.cli import main

sys.exit(main())

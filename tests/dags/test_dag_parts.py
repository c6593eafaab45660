"""`ledger_engine.dags`, what both DAGs are made of, agrees with the platform its tasks call.

It spells the kinds of audit again (importing `ledger_engine.audit` at parse time would load
the platform), so they are compared here with `ledger_engine.audit.findings`'s, in a subprocess
with an Airflow home of its own, as every Airflow import in these tests (see conftest.py).
"""

from __future__ import annotations

import subprocess
import sys

from tests.dags.conftest import REPO_ROOT

CHECK = """
from ledger_engine.audit.findings import BATCHES, FULL
from ledger_engine.dags import BATCH_AUDIT, FULL_AUDIT, PART_DOCS, PART_TASKS

assert (BATCH_AUDIT, FULL_AUDIT) == (BATCHES, FULL), (BATCH_AUDIT, FULL_AUDIT)
# Every part a DAG may run has a task id, and the full audit documents every one of them.
assert {part for part, _ in PART_DOCS} == set(PART_TASKS), PART_DOCS
assert {part for part, kind in PART_DOCS if kind == FULL} == set(PART_TASKS), PART_DOCS
print("agreed")
"""


def test_the_dags_name_the_kinds_of_audit_as_the_platform_does(
    airflow_base_env: dict[str, str],
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHECK],
        env=airflow_base_env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("agreed")

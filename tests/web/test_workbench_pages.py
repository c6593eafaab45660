"""The breaks workbench's pages and actions, served as Airflow serves them (Airflow's own auth
manager and session tokens) on a database holding the breaks of one reconciliation
(tests/support/workbench.py)."""

from __future__ import annotations

from tests.support.workbench import R9, Workbench


def test_the_queue_lists_the_open_breaks(bench: Workbench) -> None:
    queue = bench.get("/ledger/breaks")

    assert queue.status_code == 200
    assert f"{len(bench.breaks)} open in all" in queue.text
    assert bench.get(f"/ledger/breaks/{bench.breaks[R9]}").status_code == 200

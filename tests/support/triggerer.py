"""Finding a trigger's class as Airflow's triggerer does, for the scripts the DAG tests run in
subprocesses (tests/dags/trigger_watch.py, tests/dags/dag_schedule.py)."""

from __future__ import annotations

import importlib
from typing import Any


def import_string(classpath: str) -> Any:
    """The class at `classpath`, found as the triggerer finds a trigger's class."""
    module, _, name = classpath.rpartition(".")
    return getattr(importlib.import_module(module), name)

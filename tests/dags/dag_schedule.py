"""Run by the schedule tests in a subprocess, with the test's `LEDGER_*` settings: what a DAG's
schedule says, read from the DAG object Airflow parsed, with its watchers' triggers rebuilt
from their serialized form as the triggerer rebuilds them, and each task's outlets.

    python -m tests.dags.dag_schedule DAGS_FOLDER DAG_ID

run from the repository root, as a module (it imports `tests.support`). Prints, as JSON:
`timetable`, its class's name; `cron`, the clock's cron expression (a preset spelled out; the
clock inside an asset-or-time schedule), null for none; `asset`, the asset it runs on (`name`,
`uri`), null for none; `watchers`, each watcher's name, trigger classpath and kwargs and
whether the trigger rebuilt from them serializes the same; `outlets`, the assets each task
updates (tasks with none left out).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from tests.support.triggerer import import_string


def schedule(dags_folder: str, dag_id: str) -> dict[str, Any]:
    from airflow.models import DagBag

    dag = DagBag(dag_folder=dags_folder).dags[dag_id]
    timetable = dag.timetable
    asset = getattr(timetable, "asset_condition", None)
    clock = getattr(timetable, "timetable", timetable)
    watchers = []
    for watcher in getattr(asset, "watchers", None) or []:
        classpath, kwargs = watcher.trigger.serialize()
        rebuilt = import_string(classpath)(**kwargs)
        watchers.append(
            {
                "name": watcher.name,
                "classpath": classpath,
                "kwargs": kwargs,
                "rebuilt": rebuilt.serialize() == (classpath, kwargs),
            }
        )
    return {
        "timetable": type(timetable).__name__,
        "cron": getattr(clock, "expression", None),
        "asset": {"name": asset.name, "uri": asset.uri} if asset is not None else None,
        "watchers": watchers,
        "outlets": {t.task_id: [o.name for o in t.outlets] for t in dag.tasks if t.outlets},
    }


if __name__ == "__main__":
    print(json.dumps(schedule(sys.argv[1], sys.argv[2])))

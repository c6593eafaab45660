"""The benchmark's scale on paper: each size's throughput is the smallest of the caps its
measured parts set, named, and the pipeline's includes PostgreSQL's."""

from __future__ import annotations

from bench.run import scale_on_paper


def _measured(
    executor_us: float,
    driver_us: float,
    backends_seconds: float | None,
    plan_us: float | None = None,
) -> list[dict]:
    spark = {
        "variant": "spark-2",
        "workload": "uniform",
        "size": 1_000_000,
        "executor_cpu_us_per_event": executor_us,
        "driver_cpu_us_per_event": driver_us,
    }
    if plan_us is not None:
        spark["plan_cpu_us_per_event"] = plan_us
    if backends_seconds is None:
        return [spark]
    pipeline = {
        "variant": "pipeline-2",
        "workload": "uniform",
        "size": 1_000_000,
        "applied": 1_000_000,
        "cpu_seconds": {"PostgreSQL backends": backends_seconds},
    }
    return [spark, pipeline]


def _rows(lines: list[str]) -> dict[int, list[str]]:
    rows = [line for line in lines if line.startswith("| ") and line[2].isdigit()]
    return {int(r.split("|")[1]): [c.strip() for c in r.split("|")[2:-1]] for r in rows}


def test_the_executors_limit_few_cores_and_the_driver_many() -> None:
    rows = _rows(scale_on_paper(_measured(executor_us=50.0, driver_us=5.0, backends_seconds=None)))
    assert rows[2][:4] == ["40,000", "-", "200,000", "40,000 (executors)"]
    assert rows[4][3] == "80,000 (executors)"
    assert rows[16][3] == "200,000 (driver)"
    assert rows[64][3] == "200,000 (driver)"
    assert rows[2][4] == "", "no pipeline measured: no pipeline column"


def test_the_plan_task_is_a_cap_no_number_of_cores_raises() -> None:
    """The plan task's CPU is among the executors' but runs once per batch: it is taken out
    of what the cores divide and caps on its own."""
    rows = _rows(
        scale_on_paper(
            _measured(executor_us=52.0, driver_us=1.0, backends_seconds=None, plan_us=2.0)
        )
    )
    assert rows[2][:4] == ["40,000", "500,000", "1,000,000", "40,000 (executors)"]
    assert rows[16][3] == "320,000 (executors)"
    assert rows[64][3] == "500,000 (plan task)"


def test_the_pipeline_is_capped_by_postgresql_at_its_measured_cost() -> None:
    # 100 CPU seconds of backends for 10^6 committed events: 100 us each, 2 server cores.
    rows = _rows(scale_on_paper(_measured(executor_us=50.0, driver_us=5.0, backends_seconds=100)))
    assert rows[2][4] == "20,000 (PostgreSQL)"
    assert rows[64][4] == "20,000 (PostgreSQL)"
    assert rows[64][3] == "200,000 (driver)"


def test_nothing_is_projected_without_a_spark_measurement() -> None:
    assert scale_on_paper([]) == []

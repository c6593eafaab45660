"""The benchmark's stage timeline: a Spark run's stages on the run's own clock, from Spark's
status store, and the wall time no stage covers (the driver's work and Spark's between jobs)."""

from __future__ import annotations

import time

from bench.spark_phases import StageSpan, stage_timeline, timeline_rows, uncovered


def _span(start: float, end: float) -> StageSpan:
    return StageSpan(start, start, end, 1, end - start, 0.0, 0.0, "a stage")


def test_the_time_no_stage_covers_counts_gaps_once_and_overlaps_never() -> None:
    # 0-1 uncovered, 1-3 and 2-4 overlap (covered 1-4), 4-5 uncovered, 5-6 covered, 6-8 not.
    spans = [_span(1.0, 3.0), _span(2.0, 4.0), _span(5.0, 6.0)]
    assert uncovered(spans, 8.0) == 4.0
    assert uncovered([], 2.5) == 2.5
    assert uncovered([_span(0.0, 9.0)], 8.0) == 0.0, "a stage past the end covers up to it"


def test_a_runs_stages_appear_in_order_with_their_tasks_and_none_from_before(spark) -> None:
    spark.range(0, 100, numPartitions=3).count()  # before the run: not its stage
    since = time.time()
    started = time.perf_counter()
    frame = spark.range(0, 1000, numPartitions=4).repartition(2, "id")
    assert frame.rdd.mapPartitions(lambda rows: [sum(1 for _ in rows)]).sum() == 1000
    wall = time.perf_counter() - started

    spans = stage_timeline(spark, since)

    assert [span.tasks for span in spans] == [4, 2], "the shuffle's map stage, then the reduce"
    assert spans[0].shuffle_write_mb > 0 and spans[1].shuffle_read_mb > 0
    assert all(0 <= s.start <= s.first_task <= s.end <= wall + 0.5 for s in spans)
    assert spans[0].start <= spans[1].start
    assert 0 <= uncovered(spans, wall) < wall
    rows = timeline_rows(spans)
    assert [row["tasks"] for row in rows] == [4, 2]
    assert set(rows[0]) == {f for f in vars(spans[0])}

"""`run_spark_columnar` reads a batch from files or a DataFrame of lines where they lie and
returns Arrow tables whose record view is the serial runner's over the same events.

Generated ledgers and workloads (`generated_apps`) are written as files cut at random places,
with blank lines and lines that hold no event among them; every line ends as exactly one
outcome, and a line that holds no event is rejected where it lies, with its file, line number
and bytes.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark import cloudpickle

from ledger_engine import run_serial
from ledger_engine.apps.bank.generator import generate_events
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.core.records import INVALID_EVENT
from ledger_engine.runtime.columnar.executing import CHUNK
from ledger_engine.runtime.spark.engine import ExecutionOptions
from ledger_engine.runtime.spark.runner import run_spark_columnar
from tests.support import generated_apps
from tests.support.columnar import Lines, record_view_of_events, write_batch
from tests.support.generated_apps import Workload, workloads

cloudpickle.register_pickle_by_value(generated_apps)

EXAMPLES = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
GARBAGE = [b"not json", b'{"stream": "s0"', b"[1, 2]", b'{"stream":"s0","request_id":"x"}']
OPTIONS = st.builds(
    ExecutionOptions,
    bins=st.sampled_from([1, 2, 3]),
    round_cost=st.just(0),
    rounds=st.sampled_from([None, 2]),
    # A slot executes its events a chunk at a time: several chunks per slot, or one.
    chunk=st.sampled_from([1, 2, 7, CHUNK]),
)


@st.composite
def batches(draw: st.DrawFn, workload: Workload) -> tuple[list, list[int], set[int]]:
    """The workload's events with garbage lines among them, where the files are cut, and
    after which items a blank line follows."""
    items: list = []
    for event in workload.events:
        if draw(st.integers(0, 9)) == 0:
            items.append(draw(st.sampled_from(GARBAGE)))
        items.append(event)
    cuts = sorted(draw(st.sets(st.integers(1, max(len(items) - 1, 1)), max_size=3)))
    cuts = [c for c in cuts if 0 < c < len(items)]
    blank = draw(st.sets(st.integers(0, max(len(items) - 1, 0)), max_size=4))
    return items, cuts, blank


def assert_garbage_rejected_where_it_lies(result, lines: Lines) -> None:
    rejections = {r["position"]: r for r in result.rejections.to_pylist()}
    for placed in lines.garbage:
        found = rejections[placed.position]
        assert found["reason"] == INVALID_EVENT
        assert (found["source_file"], found["line_number"], found["raw"]) == (
            placed.file,
            placed.line,
            placed.item,
        )


@EXAMPLES
@given(workloads(max_events=30), OPTIONS, st.data())
def test_a_generated_batch_in_files_gives_the_serial_result(
    spark, tmp_path_factory, workload: Workload, options, data
):
    ledger = generated_apps.build_ledger(workload.app)
    items, cuts, blank = data.draw(batches(workload), label="batch")
    lines = write_batch(tmp_path_factory.mktemp("batch"), items, cuts, blank)
    result, _ = run_spark_columnar(spark, ledger, lines.paths, workload.state, options=options)
    assert len(result.outcomes) == len(items)  # every non-blank line, exactly one outcome
    assert_garbage_rejected_where_it_lies(result, lines)
    expected = run_serial(ledger, lines.events, workload.state)
    assert record_view_of_events(result, ledger, lines, workload.state) == expected


@EXAMPLES
@given(workloads(max_events=30), st.integers(1, 4), st.data())
def test_a_dataframe_of_lines_gives_what_the_same_lines_in_files_give(
    spark, tmp_path_factory, workload: Workload, partitions: int, data
):
    ledger = generated_apps.build_ledger(workload.app)
    items, cuts, blank = data.draw(batches(workload), label="batch")
    lines = write_batch(tmp_path_factory.mktemp("batch"), items, cuts, blank)
    frame = spark.sparkContext.parallelize([(v,) for v in lines.values()], partitions).toDF(
        "value binary"
    )
    from_frame, _ = run_spark_columnar(spark, ledger, frame, workload.state)
    from_files, _ = run_spark_columnar(spark, ledger, lines.paths, workload.state)
    assert from_frame.outcomes.equals(from_files.outcomes)
    assert from_frame.duplicates.equals(from_files.duplicates)
    keep = ["position", "stream", "request_id", "reason", "detail", "raw"]
    assert from_frame.rejections.select(keep).equals(from_files.rejections.select(keep))
    expected = run_serial(ledger, lines.events, workload.state)
    assert record_view_of_events(from_frame, ledger, lines, workload.state) == expected


def test_a_bank_batch_comes_back_as_typed_columns(spark, tmp_path) -> None:
    ledger = build_ledger()
    events = generate_events(3_000, accounts=80, seed=5, bad_fraction=0.03)
    lines = write_batch(tmp_path, events, [700, 1_900], set())
    result, profile = run_spark_columnar(
        spark, ledger, lines.paths, options=ExecutionOptions(bins=2, rounds=3)
    )
    expected = run_serial(ledger, events)
    assert record_view_of_events(result, ledger, lines, {}) == expected
    assert profile.rounds == 3 and profile.events == 3_000
    accounts = result.changes["accounts"]
    assert str(accounts.schema.field("key").type) == "string"
    assert str(accounts.schema.field("after").type) == "int64"
    assert result.applied_count == expected.applied_count
    assert len(result.rejections) == len(expected.rejections)
    assert len(result.duplicates) == len(expected.duplicates)

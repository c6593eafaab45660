"""`run_spark` gives a `RunResult` identical to `run_serial` on the same input.

Generated ledgers and workloads (`generated_apps`) cover several tables, every access type,
two bindings on one row, deletes, aborts, exceptions, duplicates, Zipf-skewed hot keys,
read-only streams and batches split at random points; each runs with several bin counts and
rounds. The transaction functions live in this test's helper module, which Spark's workers
cannot import, so it is pickled by value.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark import cloudpickle

from ledger_engine import AccessType, Event, run_serial, run_spark
from ledger_engine.apps.bank.generator import generate_events
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.runtime.spark.engine import ExecutionOptions
from tests.support import generated_apps
from tests.support.generated_apps import Workload, known_after, workloads

cloudpickle.register_pickle_by_value(generated_apps)

LEDGER = build_ledger()
SPARK_EXAMPLES = settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
OPTIONS = st.builds(
    ExecutionOptions,
    bins=st.sampled_from([1, 2, 3]),
    round_cost=st.just(0),
    rounds=st.sampled_from([None, 2, 3]),
)
ON_SPARK = ExecutionOptions()


def test_a_generated_bank_workload_gives_the_serial_result(spark) -> None:
    events = generate_events(2_000, accounts=60, seed=21, bad_fraction=0.05)
    assert run_spark(spark, LEDGER, events, options=ON_SPARK) == run_serial(LEDGER, events)


def test_initial_state_and_known_requests_are_honoured(spark) -> None:
    events = generate_events(500, accounts=30, seed=4)
    state = {"accounts": {"acct-000001": 10_000}, "asset_ledger": {"asset-000001": 50}}
    known = {events[5].request_id: events[5].fingerprint(), "gone": "0" * 64}
    assert run_spark(spark, LEDGER, events, state, known, ON_SPARK) == run_serial(
        LEDGER, events, state, known
    )


def test_a_bank_batch_cut_into_rounds_of_several_bins_gives_the_serial_result(spark) -> None:
    events = generate_events(3_000, accounts=100, seed=9, bad_fraction=0.02)
    options = ExecutionOptions(bins=3, rounds=4)
    assert run_spark(spark, LEDGER, events, options=options) == run_serial(LEDGER, events)


def test_a_deferred_add_that_overflows_before_an_abort_is_an_overflow_on_spark(spark) -> None:
    """An add to a deferred (only-added-to) row, then an abort: the serial runner rejects the
    second event as `overflow`, because its add leaves the int64 range before it aborts."""
    app = generated_apps.AppSpec(
        tables=(generated_apps.TableSpec("t0", str, int),),
        streams=((generated_apps.BindingSpec(0, "fee", AccessType.ADD),),),
    )
    half = 2**62
    events = [
        Event("s0", "q0", {"ops": [["add", "b0", half]], "types": {"b0": "int"}, "fee": 0}),
        Event(
            "s0",
            "q1",
            {"ops": [["add", "b0", half], ["abort"]], "types": {"b0": "int"}, "fee": 0},
        ),
    ]
    ledger = generated_apps.build_ledger(app)
    expected = run_serial(ledger, events, {"t0": {}})
    assert [r.reason for r in expected.rejections] == ["overflow"]
    assert run_spark(spark, ledger, events, {"t0": {}}, options=ON_SPARK) == expected


@SPARK_EXAMPLES
@given(workloads(max_events=30), OPTIONS)
def test_a_generated_workload_gives_the_serial_result(spark, workload: Workload, options):
    ledger = generated_apps.build_ledger(workload.app)
    expected = run_serial(ledger, workload.events, workload.state)
    assert run_spark(spark, ledger, workload.events, workload.state, options=options) == expected


@SPARK_EXAMPLES
@given(workloads(max_events=30), OPTIONS, st.data())
def test_a_workload_split_into_two_batches_gives_the_serial_result(
    spark, workload: Workload, options, data
):
    ledger = generated_apps.build_ledger(workload.app)
    cut = data.draw(st.integers(0, len(workload.events)), label="cut")
    first_events, second_events = workload.events[:cut], workload.events[cut:]
    whole = run_serial(ledger, workload.events, workload.state)
    first = run_spark(spark, ledger, first_events, workload.state, options=options)
    second = run_spark(
        spark, ledger, second_events, first.state, known_after(first_events), options=options
    )
    assert second.state == whole.state
    assert first.results + second.results == whole.results
    assert first.rejections + second.rejections == whole.rejections
    assert first.duplicates + second.duplicates == whole.duplicates
    assert first.changes + second.changes == whole.changes

"""The reconciliation benchmark: statement entries matched with ledger entries on Spark, in
entries per second, beside a pandas merge on the exact-key part of the same input.

    python -m bench.reconcile [--sizes 100000,1000000] [--accounts 1000] [--differ 0.1]
                              [--master local[2]] [--no-collect] [--seed 7]

For each size N, N ledger entries and N statement entries are generated (numpy, seeded):
the statement repeats the ledger's entries a day or two later, most of them exactly (same
reference, same amount) and a share (`--differ`) with a reference the bank mangled, a typo in
the description and the amount off by up to 40 minor units; 1% of the ledger entries are
missing from the statement and 1% of the statement entries are unknown to the ledger. Two
rules, in the house's usual order:

1. `exact`: reference equal after folding, amount equal, dates within 2 days;
2. `fuzzy`: description similarity >= 0.8, amount within 50, dates within 3 days.

Printed per size: the Spark matcher's phases (items prepared, each rule with its candidates
and rounds, breaks, results counted, and the outcome collected into Python objects), each
with its profile (`bench.spark_phases`: the executors' task seconds and how busy they kept
the cores, the JVM's and the driver's Python CPU, GC, shuffle written, jobs; a phase of many
wall seconds and few task seconds is the driver's), its entries per second (both sides'
entries over the matching's seconds, without and with the collection), what it found, and
a pandas `merge` of the same frames on (account, reference, amount) with the date window as a
filter: the exact rule's part, the only one a merge can do.
The input's conversion into Spark frames is timed apart and counted in neither.
"""

from __future__ import annotations

import argparse
import os
from datetime import date

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from rich.console import Console
from rich.table import Table

from bench.spark_phases import PhaseProfiler
from ledger_engine.core.stopwatch import Stopwatch
from ledger_engine.reconcile.matching.spark import collect_outcome, match_plan
from ledger_engine.reconcile.rules import AmountCriterion, Rule
from ledger_engine.runtime.spark.session import build_session

console = Console(width=170)
DAY = np.datetime64(date(2026, 11, 2), "D")
WORDS = np.array(["card fee", "salary", "rent", "invoice", "refund", "payout", "transfer"])
RULES = (
    Rule("exact", 0, amount=AmountCriterion(0), window_days=2, reference_similarity=1.0),
    Rule(
        "fuzzy",
        1,
        amount=AmountCriterion(50),
        window_days=3,
        description_similarity=0.8,
    ),
)


def generate(size: int, accounts: int, differ: float, seed: int) -> tuple[pd.DataFrame, ...]:
    """(statement, ledger) frames of `size` entries each, in the matcher's columns."""
    rng = np.random.default_rng(seed)
    n = np.arange(size)
    ledger = pd.DataFrame(
        {
            "id": [[1, int(i), 0] for i in n],
            "account": np.char.add("acct-", np.char.zfill((n % accounts).astype(str), 6)),
            "amount": rng.integers(100, 1_000_000, size),
            "date": DAY + rng.integers(0, 28, size).astype("timedelta64[D]"),
            "reference": np.char.add("REF-", np.char.zfill(n.astype(str), 9)),
            "description": np.char.add(
                np.char.add(WORDS[rng.integers(0, len(WORDS), size)], " no "),
                n.astype(str),
            ),
            "request_id": np.char.add("req-", n.astype(str)),
        }
    )
    # The statement: every ledger entry but 1%, then 1% entries of its own.
    kept = ledger[rng.random(size) >= 0.01].reset_index(drop=True)
    unknown = size - len(kept)
    changed = rng.random(len(kept)) < differ
    statement = pd.DataFrame(
        {
            "account": np.concatenate(
                [kept["account"], ledger["account"].to_numpy()[rng.integers(0, size, unknown)]]
            ),
            "amount": np.concatenate(
                [
                    kept["amount"] + np.where(changed, rng.integers(-40, 41, len(kept)), 0),
                    rng.integers(100, 1_000_000, unknown),
                ]
            ),
            "date": np.concatenate(
                [
                    kept["date"] + rng.integers(0, 3, len(kept)).astype("timedelta64[D]"),
                    DAY + rng.integers(0, 28, unknown).astype("timedelta64[D]"),
                ]
            ),
            "reference": np.concatenate(
                [
                    np.where(
                        changed,
                        np.char.add("X", kept["reference"].to_numpy(str)),
                        kept["reference"],
                    ),
                    np.char.add("UNKNOWN-", np.arange(unknown).astype(str)),
                ]
            ),
            "description": np.concatenate(
                [
                    np.where(
                        changed, _typo(kept["description"].to_numpy(str)), kept["description"]
                    ),
                    np.full(unknown, "cash deposit"),
                ]
            ),
        }
    )
    statement.insert(0, "id", [[2, int(i)] for i in range(len(statement))])
    return statement, ledger


def _typo(texts: np.ndarray) -> np.ndarray:
    # The first letter doubled: one edit, well within a similarity of 0.8.
    return np.char.add(texts.astype("<U1"), texts)


def pandas_merge(statement: pd.DataFrame, ledger: pd.DataFrame) -> tuple[float, int]:
    """Seconds and pairs of the exact-key part: a merge on (account, reference, amount) and
    the date window."""
    watch = Stopwatch()
    pairs = statement.merge(ledger, on=["account", "reference", "amount"], suffixes=("_s", "_l"))
    pairs = pairs[(pairs["date_s"] - pairs["date_l"]).abs() <= pd.Timedelta(days=2)]
    return watch.elapsed(), len(pairs)


def _frame(spark: SparkSession, frame: pd.DataFrame) -> DataFrame:
    # pandas holds the dates as timestamps: cast back to dates (same session time zone).
    converted = spark.createDataFrame(frame).withColumn("date", F.col("date").cast("date"))
    return converted.localCheckpoint()


PROFILE_COLUMNS = ("task s", "busy", "JVM CPU s", "py CPU s", "GC s", "shuffle MB", "jobs")


def _profile(profiler: PhaseProfiler, phase: str, cores: int) -> tuple[str, ...]:
    """A phase's profile: the executors' task seconds and how busy they kept the cores, the
    JVM's and the driver's Python CPU, GC, shuffle written and jobs run."""
    p = profiler.phases.get(phase)
    if p is None:
        return ("",) * len(PROFILE_COLUMNS)
    busy = p.task / (p.wall * cores) if p.wall else 0.0
    return (
        f"{p.task:.1f}",
        f"{busy:.0%}",
        f"{p.jvm_cpu:.1f}",
        f"{p.python_cpu:.1f}",
        f"{p.gc:.1f}",
        f"{p.shuffle_mb:.0f}",
        str(p.jobs),
    )


def measure(spark: SparkSession, size: int, args: argparse.Namespace) -> None:
    """Generate, match and report one size."""
    statement, ledger = generate(size, args.accounts, args.differ, args.seed)
    entries = len(statement) + len(ledger)
    watch = Stopwatch()
    statement_df, ledger_df = _frame(spark, statement), _frame(spark, ledger)
    converted = watch.elapsed()

    profiler = PhaseProfiler(spark)
    watch = Stopwatch()  # anew: the profiler's start-up is timed in neither
    frames = match_plan(spark, statement_df, ledger_df, RULES, on_phase=profiler.mark)
    with watch.timed("count results"):
        matched, breaks = frames.matches.count(), frames.breaks.count()
    frames.seconds["count results"] = watch.seconds["count results"]
    profiler.mark("count results")
    matching = watch.elapsed()
    reasons = {r["reason"]: r["count"] for r in frames.breaks.groupBy("reason").count().collect()}
    if args.collect:
        profiler.mark("(reasons counted, not a phase)")
        outcome = collect_outcome(frames)
        profiler.mark("collect")
        assert len(outcome.matches) == matched and len(outcome.breaks) == breaks
    merge_seconds, merge_pairs = pandas_merge(statement, ledger)

    table = Table(title=f"{size:,} entries a side ({entries:,} in all)")
    table.add_column("phase")
    table.add_column("seconds", justify="right")
    for heading in PROFILE_COLUMNS:
        table.add_column(heading, justify="right")
    table.add_column("detail")
    for phase, seconds in frames.seconds.items():
        rule = frames.rules.get(phase.removeprefix("rule "))
        detail = (
            f"{rule['candidates']:,} candidates, {rule['rounds']} rounds, {rule['kept']:,} kept"
            if rule
            else ""
        )
        profile = _profile(profiler, phase, _cores(args.master))
        table.add_row(phase, f"{seconds:.2f}", *profile, detail)
    mismatch = frames.rules.get("amount_mismatch")
    if mismatch:
        table.add_row(
            "",
            "",
            *("",) * len(PROFILE_COLUMNS),
            f"amount mismatches: {mismatch['candidates']:,} candidates, "
            f"{mismatch['rounds']} rounds, {mismatch['kept']:,} kept",
        )
    console.print(table)
    console.print(
        "  task s: the executors' task time; busy: task s / (wall x cores); shuffle MB: written"
    )
    console.print(f"  input to Spark frames (not counted): {converted:.2f} s")
    console.print(f"  {matched:,} matches; breaks {reasons}")
    rate = entries / matching
    console.print(f"  Spark matcher: {matching:.2f} s, [bold]{rate:,.0f} entries/s[/bold]")
    if args.collect:
        with_collect = matching + frames.seconds["collect"]
        console.print(
            f"  with the outcome collected into Python: {with_collect:.2f} s, "
            f"{entries / with_collect:,.0f} entries/s"
        )
    merge_rate = entries / merge_seconds
    console.print(
        f"  pandas merge (exact-key part, {merge_pairs:,} pairs): {merge_seconds:.2f} s, "
        f"{merge_rate:,.0f} entries/s; Spark matcher / pandas merge = {rate / merge_rate:.3f}"
    )


def _cores(master: str) -> int:
    """The cores a local master runs tasks on (2 for any other master: this machine's)."""
    inside = master.removeprefix("local[").removesuffix("]")
    return os.cpu_count() or 1 if inside == "*" else int(inside) if inside.isdigit() else 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--accounts", type=int, default=1000)
    parser.add_argument("--differ", type=float, default=0.1)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-collect", dest="collect", action="store_false")
    args = parser.parse_args()
    spark = build_session(args.master, app_name="reconcile-bench", jit="full")
    # The generated input reaches Spark through Arrow (not row by row through Python).
    spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", "true")
    console.print(
        f"rules: {', '.join(r.name for r in RULES)}; {args.accounts:,} accounts, "
        f"{args.differ:.0%} of the statement's entries differ; master {args.master}"
    )
    try:
        # A first, small run warms the JVM (class loading, code generation), which would
        # otherwise be counted in the first size's figures; not reported.
        statement, ledger = generate(1_000, args.accounts, args.differ, args.seed)
        collect_outcome(match_plan(spark, _frame(spark, statement), _frame(spark, ledger), RULES))
        for size in (int(s) for s in args.sizes.split(",")):
            measure(spark, size, args)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()

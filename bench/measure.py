"""One measurement, in a process of its own so that its peak memory is its own.

    python -m bench.measure <approach> --workload W --size N --accounts A --out result.json
        [--master local[2]] [--clients 8] [--database-url URL] [--data-dir DIR]
        [--batch-events N]

Approaches: `plain` (a plain Python loop over two dicts, no engine: the floor), `serial` (the
reference runner), `spark` (`run_spark_columnar` over landed files; `--master standalone[2]`
on a standalone cluster of two workers started for it, checked against the serial runner),
`pipeline` (event files
in, committed and audited in PostgreSQL), `postgres` (PostgreSQL alone, one transaction per
transfer), `procedure` (PostgreSQL alone, one PL/pgSQL procedure over the COPYed transfers, one
transaction), `ledger-run` (end to end as a user runs it: `ledger run --audit` timed whole, Spark's
start-up and the batch audit included, on an empty database, over `--size` bank events that
`land_generated` landed before over `--accounts` accounts), and `seed` (the opening deposits
that give a pipeline database its starting state).

The result is JSON: seconds and transactions per second of the measured part, the peak
resident memory of this process and all its children (Spark's JVM and Python workers), and
what the approach reports about itself (rounds, Spark task profile, retries, ...).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from bench.workloads import opening_deposits, opening_state, transfers
from ledger_engine.core.stopwatch import Stopwatch

EVENTS_PER_FILE = 10_000
# The kinds of process whose CPU the sampler counts (`cpu_kind`).
DRIVER, JVM, WORKERS = "driver (this process)", "Spark JVM", "Python workers"
# The sampler's own thread, in this process: counted apart from the driver, whose work it is
# not (walking every process ten times a second costs 10-15% of a core beside Spark).
SAMPLER = "the sampler (this process)"


class ProcessSampler:
    """Samples, every 100 ms, the resident memory of this process tree (its peak) and the CPU
    seconds of every process that works for the measurement, by kind (`cpu_kind`): this
    process, its Spark JVM and Python workers, and the PostgreSQL server's processes. On a
    machine of two cores, the CPU by kind says where the time goes when every kind is busy
    at once; the server's processes are on the same cores (a server elsewhere would count
    nothing here, and its processes are counted whatever database they serve)."""

    def __init__(self) -> None:
        self.peak = 0
        self.wall = 0.0  # seconds from the start to the stop, the window of the CPU figures
        self._watch = Stopwatch()  # started again on entering
        # Per process, (pid, start time, name) so that a reused pid is another process: its kind
        # (`cpu_kind`, None if none of ours), decided once, and its CPU seconds when first
        # seen and when last seen.
        self._kinds: dict[tuple[int, float, str], str | None] = {}
        self._started: dict[tuple[int, float, str], float] = {}
        self._latest: dict[tuple[int, float, str], float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._reaped_baseline = 0.0
        self._own_cpu = 0.0  # the sampling thread's CPU seconds

    def _sample(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(0.1):
            self._sample_once(me, baseline=False)
        self._own_cpu = time.thread_time()

    def _sample_once(self, me: psutil.Process, baseline: bool) -> None:
        total = 0
        tree = [me, *me.children(recursive=True)]
        for process in tree:
            with contextlib.suppress(psutil.Error):
                total += process.memory_info().rss
        self.peak = max(self.peak, total)
        tree_pids = {p.pid for p in tree}
        for process in psutil.process_iter(["name", "create_time"]):
            with contextlib.suppress(psutil.Error):
                # A process that execs another program (Spark's launch script becoming the
                # JVM) keeps its pid and start time: its name tells the two apart.
                key = (process.pid, process.info["create_time"], process.info["name"])
                if key not in self._kinds:
                    self._kinds[key] = cpu_kind(process, me.pid, tree_pids)
                    self._after_exec(key)
                if self._kinds[key] is None:
                    continue
                times = process.cpu_times()
                seconds = times.user + times.system
                self._started.setdefault(key, seconds if baseline else 0.0)
                self._latest[key] = seconds

    def _after_exec(self, key: tuple[int, float, str]) -> None:
        """If `key`'s process ran another program before (the same pid and start time), its
        CPU seconds so far were that program's: `key` counts from where they end."""
        same_process = [k for k in self._latest if k[:2] == key[:2]]
        if same_process:
            self._started[key] = max(self._latest[k] for k in same_process)

    def cpu_seconds(self) -> dict[str, float]:
        """CPU seconds by kind of process, from the start to the last sample; children that
        ended meanwhile count in full (`_unsampled_children`)."""
        by_kind: dict[str, float] = {}
        for key, seconds in self._latest.items():
            kind = self._kinds[key]
            assert kind is not None
            by_kind[kind] = by_kind.get(kind, 0.0) + seconds - self._started[key]
        for kind, seconds in self._unsampled_children().items():
            by_kind[kind] = by_kind.get(kind, 0.0) + seconds
        if DRIVER in by_kind:
            by_kind[DRIVER] -= self._own_cpu
            by_kind[SAMPLER] = self._own_cpu
        return dict(sorted(by_kind.items(), key=lambda item: -item[1]))

    def _unsampled_children(self) -> dict[str, float]:
        """The CPU seconds of this process's children that ended (and were waited for) during
        the measurement beyond what the samples saw of them, by kind: a child that lives less
        than a sampling interval, or is not sampled in its last moments on a loaded machine,
        is otherwise lost. The kernel's count of waited-for children is exact (those still
        alive are not in it); it is shared among the kinds of the ended children in proportion
        to what the samples saw of each, and counted as workers where none was seen."""
        reaped = _waited_children_cpu() - self._reaped_baseline
        alive = {p.pid for p in psutil.Process().children(recursive=True)}
        seen: dict[str, float] = {}
        for key, kind in self._kinds.items():
            if kind in (WORKERS, JVM) and key in self._latest and key[0] not in alive:
                seen[kind] = seen.get(kind, 0.0) + self._latest[key] - self._started[key]
        missing = reaped - sum(seen.values())
        if missing <= 0:
            return {}
        total = sum(seen.values())
        if total <= 0:
            return {WORKERS: missing}
        return {kind: missing * seconds / total for kind, seconds in seen.items()}

    def __enter__(self) -> ProcessSampler:
        # The baseline before the measured work starts: processes running now count from
        # here, processes started later from their start.
        self._sample_once(psutil.Process(), baseline=True)
        self._reaped_baseline = _waited_children_cpu()
        self._watch = Stopwatch()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample_once(psutil.Process(), baseline=False)  # the last word on every process
        self.wall = self._watch.elapsed()


def _waited_children_cpu() -> float:
    """User and system CPU seconds of every child this process has waited for, so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_kind(process: psutil.Process, me: int, tree: set[int]) -> str | None:
    """What a process is to the measurement, or None if it is none of ours."""
    if process.pid == me:
        return DRIVER
    if process.pid in tree:
        return JVM if process.info["name"] == "java" else WORKERS
    if process.info["name"] != "postgres":
        return None
    # A server process names its job in its title: "postgres: 15/main: user database host"
    # for a client's backend, "postgres: 15/main: checkpointer" and so on for the rest.
    title = " ".join(process.cmdline())
    return "PostgreSQL backends" if "(" in title or "[local]" in title else "PostgreSQL other"


def _plain(args: argparse.Namespace) -> dict[str, Any]:
    from bench.plain import run_plain

    events = [t.event() for t in transfers(args.workload, args.size, args.accounts)]
    state = opening_state(args.accounts)
    watch = Stopwatch()
    run = run_plain(events, state)
    seconds = watch.elapsed()
    # Counted as the serial runner counts: a transfer that emits REJECT is applied too, and a
    # deposit emits no result.
    deposits = sum(1 for e in events if e.stream == "deposits")
    return {"seconds": seconds, "applied": len(run.results) + deposits}


def _serial(args: argparse.Namespace) -> dict[str, Any]:
    from ledger_engine import run_serial
    from ledger_engine.apps.bank.ledger import build_ledger

    events = [t.event() for t in transfers(args.workload, args.size, args.accounts)]
    state = opening_state(args.accounts)
    ledger = build_ledger()
    watch = Stopwatch()
    result = run_serial(ledger, events, state)
    seconds = watch.elapsed()
    return {"seconds": seconds, "applied": result.applied_count}


def _spark(args: argparse.Namespace) -> dict[str, Any]:
    """`run_spark_columnar` over the workload landed as files (as the `generate` command
    writes them, outside the measured part), from the opening state in memory.

    `--master standalone[N]` runs it on a Spark standalone cluster of N one-core workers
    started on this machine for the measurement (`operations.spark_cluster`), and checks the
    result against the serial runner's (outside the measured part): every event's outcome
    and every change, in order."""
    import tempfile

    from ledger_engine.apps.bank.ledger import build_ledger
    from ledger_engine.operations.spark_cluster import standalone_cluster

    state = opening_state(args.accounts)
    ledger = build_ledger()
    standalone = re.fullmatch(r"standalone\[(\d+)\]", args.master)
    with tempfile.TemporaryDirectory(dir=args.data_dir) as folder:
        inbox = Path(folder) / "inbox"
        inbox.mkdir()
        _land((t.event() for t in transfers(args.workload, args.size, args.accounts)), inbox, "ev")
        paths = sorted(inbox.glob("*.jsonl"))
        if standalone:
            workers = int(standalone.group(1))
            with standalone_cluster(Path(folder) / "cluster", workers, memory="2g") as master:
                measured, result = _spark_run(master, ledger, paths, state)
            measured["equal_to_serial"] = _equal_to_serial(ledger, args, state, result)
            return measured
        return _spark_run(args.master, ledger, paths, state)[0]


def _spark_run(master: str, ledger, paths: list[Path], state) -> tuple[dict[str, Any], Any]:
    """One measured `run_spark_columnar` (after a warm-up run of one file) on `master`."""
    from bench.spark_phases import stage_timeline, timeline_rows, uncovered
    from ledger_engine.runtime.spark.engine import ExecutionOptions
    from ledger_engine.runtime.spark.runner import run_spark_columnar
    from ledger_engine.runtime.spark.session import build_session

    spark = build_session(master, driver_memory="8g")
    try:
        run_spark_columnar(spark, ledger, paths[:1], state)  # warm the JVM and the workers
        before = _executor_cpu()
        # Started together: the stages' times (epoch seconds) are put on the watch's clock.
        watch, started_epoch = Stopwatch(), time.time()
        result, profile = run_spark_columnar(
            spark, ledger, paths, state, options=ExecutionOptions()
        )
        seconds = watch.elapsed()
        stages = stage_timeline(spark, started_epoch)
        executors = {k: v - before.get(k, 0.0) for k, v in _executor_cpu().items()}
        cores = spark.sparkContext.defaultParallelism
    finally:
        spark.stop()
    events = max(profile.events, 1)
    measured = {
        "seconds": seconds,
        "applied": result.applied_count,
        "rounds": profile.rounds,
        "slots": profile.slots,
        "driver_seconds": profile.driver_seconds,
        "driver_cpu": profile.driver_cpu,
        "driver_cpu_us_per_event": profile.driver_cpu_us_per_event,
        "executor_cpu": executors,
        "executor_cpu_us_per_event": sum(executors.values()) * 1e6 / events,
        "executor_cores_busy": sum(executors.values()) / seconds / cores,
        # The plan task runs once per batch: executors' CPU that no number of cores divides.
        "plan_cpu_us_per_event": sum(profile.tasks.get("plan", {}).get("cpu", {}).values())
        * 1e6
        / events,
        "tasks": profile.tasks,
        # Stage by stage from Spark's status store; the seconds no stage covers are the
        # driver's own work and Spark's between jobs.
        "stages": timeline_rows(stages),
        "outside_stages_seconds": uncovered(stages, seconds),
    }
    return measured, result


def _equal_to_serial(ledger, args: argparse.Namespace, state, result) -> bool:
    """Whether `result` (a `ColumnarRunResult`) gives every event the serial runner's outcome
    and makes the serial runner's changes, in batch order."""
    from ledger_engine import run_serial

    events = [t.event() for t in transfers(args.workload, args.size, args.accounts)]
    serial = run_serial(ledger, events, state)
    if result.outcomes.column("status").to_pylist() != [o.status for o in serial.outcomes]:
        return False
    ours = []
    for name, changes in result.changes.items():
        for position, seq, key, before, after in zip(
            *(changes.column(c).to_pylist() for c in ("position", "seq", "key", "before", "after")),
            strict=True,
        ):
            ours.append((position, seq, name, key, before, after))
    ours.sort(key=lambda c: (c[0], c[1]))
    theirs = [(c.table, c.key, c.before, c.after) for c in serial.changes]
    return [c[2:] for c in ours] == theirs


def _executor_cpu() -> dict[str, float]:
    """CPU seconds so far of this process's Spark JVM and Python workers, by kind."""
    found = {JVM: 0.0, WORKERS: 0.0}
    me = os.getpid()
    for child in psutil.Process(me).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            times = child.cpu_times()
            kind = JVM if "java" in child.name() else WORKERS
            found[kind] += times.user + times.system
    return found


def _pipeline_settings(args: argparse.Namespace, files_per_batch: int):
    from ledger_engine.config import Settings

    return Settings.from_env(
        {
            "LEDGER_DATABASE_URL": args.database_url,
            "LEDGER_DATA_DIR": args.data_dir,
            "LEDGER_SPARK_MASTER": args.master,
            "LEDGER_SPARK_DRIVER_MEMORY": "8g",
            "LEDGER_FILES_PER_BATCH": str(files_per_batch),
        }
    )


def _land(events, inbox: Path, prefix: str) -> None:
    from ledger_engine.pipeline.event_inbox import write_event_files

    write_event_files(events, inbox, events_per_file=EVENTS_PER_FILE, prefix=prefix)


def _seed(args: argparse.Namespace) -> dict[str, Any]:
    from ledger_engine.pipeline.job import run_pipeline
    from ledger_engine.tasks.audit_runs import run_audits

    settings = _pipeline_settings(args, max(1, args.batch_events // EVENTS_PER_FILE))
    _land(opening_deposits(args.accounts), settings.inbox, "open")
    watch = Stopwatch()
    report = run_pipeline(settings)
    seconds = watch.elapsed()
    # A full audit leaves its mark: the measured runs' batch audits cover their own batches.
    audit, _ = run_audits(settings, full=True)
    assert audit.passed, [c for c in audit.checks if not c.passed]
    return {"seconds": seconds, "applied": report.total("applied")}


def _pipeline(args: argparse.Namespace) -> dict[str, Any]:
    """The pipeline, with the batch audit after every batch (as a run of one batch each would
    have it), so that the first and the last batch show how commit and audit grow."""
    from ledger_engine.pipeline.job import BatchSummary, run_pipeline
    from ledger_engine.tasks.audit_runs import run_audits

    settings = _pipeline_settings(args, max(1, args.batch_events // EVENTS_PER_FILE))
    events = [t.event() for t in transfers(args.workload, args.size, args.accounts)]
    _land(events, settings.inbox, f"run-{args.workload}-{args.size}")
    del events
    audits: list[float] = []
    audit_parts: list[dict[str, float]] = []
    pages: list[str] = []

    def audit_batch(summary: BatchSummary) -> None:
        audit_watch = Stopwatch()
        audit, page = run_audits(settings)
        audits.append(audit_watch.elapsed())
        audit_parts.append(audit.seconds)
        pages.append(str(page))
        assert audit.passed, [c for c in audit.checks if not c.passed]

    watch = Stopwatch()
    report = run_pipeline(settings, on_batch=audit_batch)
    seconds = watch.elapsed()
    batches = [
        {
            "events": b.ingested,
            "rounds": b.rounds,
            "execute_seconds": round(b.execute_seconds, 3),
            "execute_driver_cpu": round(b.execute_cpu_seconds, 3),
            "commit_seconds": round(b.commit_seconds, 3),
            "audit_seconds": round(audit, 3),
        }
        for b, audit in zip(report.batches, audits, strict=True)
    ]
    return {
        "seconds": seconds,
        "audit_seconds": sum(audits),
        "audit_parts": _summed(audit_parts),
        "applied": report.total("applied"),
        "batches": batches,
        "execute_seconds": sum(b.execute_seconds for b in report.batches),
        # The driver's CPU per event while the batches executed (their commits left out).
        "execute_driver_cpu_us_per_event": sum(b.execute_cpu_seconds for b in report.batches)
        * 1e6
        / max(sum(b.ingested for b in report.batches), 1),
        "driver_seconds": _summed(b.seconds for b in report.batches),
        "tasks": _merged_tasks(b.tasks for b in report.batches),
        "report": pages[-1] if pages else None,
    }


def _summed(dicts) -> dict[str, float]:
    from ledger_engine.runtime.spark.profile import add_seconds

    total: dict[str, float] = {}
    for d in dicts:
        add_seconds(total, d)
    return total


def _merged_tasks(profiles) -> dict[str, Any]:
    """Task profiles of several batches, stage by stage ("round 0", "settle", ...); a stage's
    `slowest` is the sum over the batches of its slowest task."""
    from ledger_engine.runtime.spark.profile import add_seconds

    merged: dict[str, Any] = {}
    for profile in profiles:
        for stage, report in profile.items():
            into = merged.setdefault(
                stage, {"tasks": 0, "items": 0, "seconds": {}, "cpu": {}, "slowest": 0.0}
            )
            into["tasks"] += report["tasks"]
            into["items"] += report["items"]
            into["slowest"] += report["slowest"]
            for kind in ("seconds", "cpu"):
                add_seconds(into[kind], report[kind])
    return merged


def _postgres(args: argparse.Namespace) -> dict[str, Any]:
    from bench.postgres_alone import run_postgres
    from ledger_engine.store.database import libpq_url

    work = transfers(args.workload, args.size, args.accounts)
    outcome = run_postgres(libpq_url(args.database_url), work, args.clients)
    assert outcome["committed"] + outcome["rejected"] == len(work), "every transfer ended"
    return {**outcome, "applied": outcome["committed"]}


def _procedure(args: argparse.Namespace) -> dict[str, Any]:
    from bench.procedure import run_procedure
    from ledger_engine.store.database import libpq_url

    work = transfers(args.workload, args.size, args.accounts)
    outcome = run_procedure(libpq_url(args.database_url), work)
    assert outcome["applied"] + outcome["rejected"] == len(work), "every transfer ended"
    return outcome


# `ledger generate` writes this many events per file: a batch of about `--batch-events` events
# takes that many events' files.
GENERATED_PER_FILE = 1_000


def _ledger_command(args: argparse.Namespace, *command: str) -> None:
    """Run `ledger <command>` as a user does, on the database and data folder of `args`."""
    import subprocess
    import sys

    env = {
        **os.environ,
        "LEDGER_DATABASE_URL": args.database_url,
        "LEDGER_DATA_DIR": args.data_dir,
        "LEDGER_SPARK_MASTER": args.master,
        "LEDGER_FILES_PER_BATCH": str(max(1, args.batch_events // GENERATED_PER_FILE)),
    }
    cli = [sys.executable, "-m", "ledger_engine.cli", *command]
    subprocess.run(cli, env=env, check=True, stdout=subprocess.DEVNULL)


def land_generated(args: argparse.Namespace) -> None:
    """`ledger generate`: `args.size` bank events over `args.accounts` accounts landed in the
    inbox of `args.data_dir`, for `ledger-run` to take (outside its measuring window)."""
    _ledger_command(args, "generate", "--events", str(args.size), "--accounts",
                    str(args.accounts), "--seed", "11", "--tag", "bench")  # fmt: skip


def _ledger_run(args: argparse.Namespace) -> dict[str, Any]:
    """`ledger run --audit` over the `args.size` bank events landed in `args.data_dir`
    (`land_generated`), timed whole as the command line runs it."""
    from sqlalchemy import text

    from ledger_engine.apps.bank.ledger import build_ledger
    from ledger_engine.store.database import connect, ledger_url

    watch = Stopwatch()
    _ledger_command(args, "run", "--audit")
    seconds = watch.elapsed()
    engine = connect(ledger_url(args.database_url, build_ledger()))
    try:
        with engine.connect() as conn:
            counts = conn.execute(
                text(
                    "SELECT count(*), COALESCE(sum(events_ingested), 0), COALESCE(sum(applied), 0)"
                    " FROM ledger_batches"
                )
            ).one()
    finally:
        engine.dispose()
    batches, ingested, applied = (int(c) for c in counts)
    assert ingested == args.size, f"{ingested} of {args.size} landed events committed"
    return {"seconds": seconds, "applied": applied, "batches": batches, "events": ingested}


APPROACHES: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "ledger-run": _ledger_run,
    "plain": _plain,
    "serial": _serial,
    "spark": _spark,
    "pipeline": _pipeline,
    "postgres": _postgres,
    "procedure": _procedure,
    "seed": _seed,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("approach", choices=sorted(APPROACHES))
    parser.add_argument("--workload", default="uniform")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--accounts", type=int, default=1_000_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--database-url")
    parser.add_argument("--data-dir")
    parser.add_argument("--batch-events", type=int, default=100_000)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    with ProcessSampler() as sampler:
        result = APPROACHES[args.approach](args)
    size = args.accounts if args.approach == "seed" else args.size
    result.update(
        approach=args.approach,
        workload=args.workload,
        size=size,
        tps=size / result["seconds"],
        peak_mb=sampler.peak / 2**20,
        cpu_seconds=sampler.cpu_seconds(),
        sampled_seconds=sampler.wall,
    )
    Path(args.out).write_text(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()

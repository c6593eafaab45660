"""The benchmark: seven ways to execute the same bank transfers, measured side by side.

    bash bench/run.sh [--sizes 10000,100000,1000000] [--workloads uniform,zipf,fee]
                      [--accounts 1000000] [--batch-events 100000] [--skip postgres-1]

For every workload (`bench/workloads.py`) and size, on the same generated events:

1. `plain`: a plain Python loop applying the transfers to two dicts, no engine (the floor,
   `bench/plain.py`);
2. `serial`: the serial reference runner;
3. `spark`: `run_spark_columnar` over the events landed as files, from the opening state in
   memory (no PostgreSQL), on `local[1]` and `local[2]`, and on a standalone cluster of a
   master and two one-core workers started on this machine (`spark-cluster`, its result
   checked against the serial runner's);
4. `pipeline`: the whole pipeline, event files in, committed and audited in PostgreSQL, on
   `local[1]` and `local[2]`;
5. `postgres`: PostgreSQL alone, the same transfers as SERIALIZABLE transactions from 1 and
   from 8 client threads;
6. `procedure`: PostgreSQL alone, the transfers COPYed in and applied, change log included, by
   one PL/pgSQL procedure in one transaction (`bench/procedure.py`);
7. `ledger-run` (on the `uniform` workload's row only): end to end as a user runs it, `ledger
   run --audit` over as many bank events as the size (`ledger generate`'s mix of deposits,
   transfers, lookups, faulty events and retries over `--run-accounts` accounts, landed
   beforehand) on an empty database, Spark's start-up and the batch audit included; compared
   with `procedure` at the same size.

Every measurement runs in a process of its own (`bench/measure.py`) and reports its seconds,
transactions per second and peak memory (its whole process tree). The pipeline and PostgreSQL
alone start from a copy (`CREATE DATABASE ... TEMPLATE`) of one seeded database, in which the
pipeline itself committed the opening deposit of every account. PostgreSQL is the server of
`LEDGER_DATABASE_URL`, or the embedded one.

Results go to `bench/results/<time>.json` and `.md`: throughput and memory per approach, the
ratios between them (among them how many times the plain loop's per-transfer cost the serial
runner pays), local[2] over local[1], and what the hot fee account costs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from bench.databases import create_database, drop_database
from bench.workloads import ADD_PATH, GIANT_COMPONENT, WORKLOADS
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.config import PROJECT_ROOT
from ledger_engine.core.stopwatch import Stopwatch
from ledger_engine.store.database import connect, ledger_url
from ledger_engine.store.embedded import start_embedded, to_sqlalchemy_url
from ledger_engine.store.migrations import migrate
from ledger_engine.store.schema import apply_declared_schema

RESULTS = PROJECT_ROOT / "bench" / "results"
SEED_DB = "ledger_bench_seed"
RUN_DB = "ledger_bench_run"
console = Console()

# (name, approach, options): the columns of the benchmark.
VARIANTS: list[tuple[str, str, dict[str, str]]] = [
    ("plain", "plain", {}),
    ("serial", "serial", {}),
    ("spark-1", "spark", {"--master": "local[1]"}),
    ("spark-2", "spark", {"--master": "local[2]"}),
    # A standalone master and two one-core workers on this machine, checked against serial.
    ("spark-cluster", "spark", {"--master": "standalone[2]"}),
    ("pipeline-1", "pipeline", {"--master": "local[1]"}),
    ("pipeline-2", "pipeline", {"--master": "local[2]"}),
    ("postgres-1", "postgres", {"--clients": "1"}),
    ("postgres-8", "postgres", {"--clients": "8"}),
    ("procedure", "procedure", {}),
    ("ledger-run", "ledger-run", {}),
]
# The approaches that run on a copy of the seed database.
ON_DATABASE = ("pipeline", "postgres", "procedure")
# The end-to-end variant measures its own bank events, whatever the workload: one row is enough.
END_TO_END_WORKLOAD = "uniform"


def server_url(work: Path) -> str:
    """SQLAlchemy URL of the server's maintenance database."""
    external = os.environ.get("LEDGER_DATABASE_URL")
    if external:
        return to_sqlalchemy_url(external)
    return start_embedded(work / "pgdata", keep_running=True)


def database(server: str, name: str, template: str | None = None) -> str:
    """The bank's ledger URL (`ledger_url`: the database and the bank's schema) on a fresh
    database (dropped first if it exists: a run cut short leaves its databases), copied from
    the database `template` if given."""
    drop_database(server, name)
    return ledger_url(create_database(server, name, template=template), build_ledger())


def measure(approach: str, options: dict[str, str], work: Path) -> dict[str, Any]:
    out = work / "result.json"
    out.unlink(missing_ok=True)
    command = [sys.executable, "-m", "bench.measure", approach, "--out", str(out)]
    for flag, value in options.items():
        command += [flag, value]
    log = work / "measure.log"
    with open(log, "ab") as handle:
        done = subprocess.run(command, cwd=PROJECT_ROOT, stdout=handle, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise RuntimeError(f"{approach} {options} failed; see {log}")
    return json.loads(out.read_text())


def seed(server: str, args: argparse.Namespace, work: Path) -> tuple[str, Path]:
    """The seed database and the data folder (checkpoint) of the pipeline that filled it."""
    url = database(server, SEED_DB)
    engine = connect(url)
    migrate(engine)
    apply_declared_schema(engine, build_ledger())
    engine.dispose()
    data = work / "seed-data"
    shutil.rmtree(data, ignore_errors=True)
    result = measure(
        "seed",
        {
            "--accounts": str(args.accounts),
            "--database-url": url,
            "--data-dir": str(data),
            "--batch-events": str(args.batch_events),
            "--master": "local[2]",
        },
        work,
    )
    console.print(
        f"seeded {args.accounts:,} accounts through the pipeline in {result['seconds']:.1f} s"
    )
    shutil.copytree(data / "checkpoint", work / "seed-checkpoint")
    return url, data


def run_variant(
    name: str,
    approach: str,
    options: dict[str, str],
    args: argparse.Namespace,
    workload: str,
    size: int,
    server: str,
    seed_data: Path | None,
    work: Path,
) -> dict[str, Any]:
    common = {"--workload": workload, "--size": str(size), "--accounts": str(args.accounts)}
    if approach == "ledger-run":
        common.update(end_to_end_options(args, size, server, work))
    if approach in ON_DATABASE:
        common["--database-url"] = database(server, RUN_DB, SEED_DB)
    if approach == "pipeline":
        assert seed_data is not None, "a pipeline runs on the seeded database"
        # The run continues the seed's streaming query (so its batch ids follow the seed's),
        # in the seed's own folder: a checkpoint names its inbox by absolute path.
        shutil.rmtree(seed_data / "checkpoint")
        shutil.copytree(work / "seed-checkpoint", seed_data / "checkpoint")
        for landed in (seed_data / "inbox").glob("run-*.jsonl"):
            landed.unlink()
        common["--data-dir"] = str(seed_data)
        common["--batch-events"] = str(args.batch_events)
    result = measure(approach, {**common, **options}, work)
    result["variant"] = name
    return result


def end_to_end_options(
    args: argparse.Namespace, size: int, server: str, work: Path
) -> dict[str, str]:
    """`bench.measure ledger-run`'s options: an empty database and a data folder into which
    `size` bank events over `args.run_accounts` accounts are landed here, before the measuring
    process starts (`ledger generate`'s time is not the run's)."""
    from bench.measure import land_generated

    drop_database(server, RUN_DB)
    url = create_database(server, RUN_DB)
    data = work / "ledger-run"
    shutil.rmtree(data, ignore_errors=True)
    landing = argparse.Namespace(
        database_url=url,
        data_dir=str(data),
        master="local[2]",
        batch_events=args.batch_events,
        size=size,
        accounts=args.run_accounts,
    )
    land_generated(landing)
    # The measuring process runs on what was landed: the same settings, as its options.
    return {f"--{name.replace('_', '-')}": str(value) for name, value in vars(landing).items()}


def ratios(rows: dict[tuple[str, int], dict[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The comparisons the issue asks for, per workload and size."""
    out = []
    for (workload, size), by_variant in rows.items():
        tps = {name: r["tps"] for name, r in by_variant.items()}

        def ratio(a: str, b: str, tps: dict[str, float] = tps) -> float | None:
            return tps[a] / tps[b] if a in tps and b in tps else None

        entry = {
            "workload": workload,
            "size": size,
            "pipeline-2 / postgres-8": ratio("pipeline-2", "postgres-8"),
            "pipeline-2 / procedure": ratio("pipeline-2", "procedure"),
            "ledger-run / procedure": ratio("ledger-run", "procedure"),
            # plain tps over serial tps: how many times the plain loop's per-transfer cost the
            # serial runner pays.
            "serial cost / plain": ratio("plain", "serial"),
            "spark-2 / serial": ratio("spark-2", "serial"),
            "spark-2 / spark-1": ratio("spark-2", "spark-1"),
            "spark-cluster / serial": ratio("spark-cluster", "serial"),
            "pipeline-2 / pipeline-1": ratio("pipeline-2", "pipeline-1"),
            "postgres-8 / postgres-1": ratio("postgres-8", "postgres-1"),
        }
        uniform = rows.get(("uniform", size))
        if workload == "fee" and uniform:
            for name in tps:
                if name in uniform:
                    entry[f"fee cost {name}"] = 1 - tps[name] / uniform[name]["tps"]
        out.append(entry)
    return out


def markdown(results: list[dict[str, Any]], comparisons: list[dict[str, Any]], meta: dict) -> str:
    names = [name for name, _, _ in VARIANTS if any(r["variant"] == name for r in results)]
    lines = [
        f"# Benchmark {meta['stamp']}",
        "",
        f"{meta['accounts']:,} accounts; PostgreSQL: {meta['postgres']}; machine: "
        f"{meta['cpus']} CPUs. Throughput in transactions per second (peak memory in MB).",
        "",
        "| workload | events | " + " | ".join(names) + " |",
        "| --- | ---: | " + " | ".join("---:" for _ in names) + " |",
    ]
    keys = sorted({(r["workload"], r["size"]) for r in results}, key=lambda k: (k[1], k[0]))
    for workload, size in keys:
        cells = []
        for name in names:
            found = [
                r
                for r in results
                if (r["workload"], r["size"], r["variant"]) == (workload, size, name)
            ]
            if not found:
                cells.append("")
                continue
            cells.append(f"{found[0]['tps']:,.0f} ({found[0]['peak_mb']:,.0f})")
        lines.append(f"| {workload} | {size:,} | " + " | ".join(cells) + " |")
    lines += ["", "## Ratios", ""]
    columns = sorted({k for c in comparisons for k in c if k not in ("workload", "size")})
    lines.append("| workload | events | " + " | ".join(columns) + " |")
    lines.append("| --- | ---: | " + " | ".join("---:" for _ in columns) + " |")
    for c in comparisons:
        cells = [
            ""
            if c.get(k) is None
            else (f"{c[k]:.1%}" if k.startswith("fee cost") else f"{c[k]:.2f}")
            for k in columns
        ]
        lines.append(f"| {c['workload']} | {c['size']:,} | " + " | ".join(cells) + " |")
    lines += scale_on_paper(results)
    lines += ["", "## Where the time goes", ""]
    largest = max((r["size"] for r in results), default=0)
    lines += cpu_table([r for r in results if r["size"] == largest])
    for r in results:
        if r["size"] != largest or r["approach"] not in ("spark", "pipeline"):
            continue
        lines.append(f"**{r['workload']} {largest:,} {r['variant']}** ({r['seconds']:.1f} s)")
        lines.append("")
        driver = ", ".join(f"{k} {v:.1f} s" for k, v in r.get("driver_seconds", {}).items())
        lines.append(f"- driver: {driver}")
        if "equal_to_serial" in r:
            verdict = "equal to" if r["equal_to_serial"] else "**differs from**"
            lines.append(f"- {verdict} the serial runner's result (every outcome and change)")
        if "driver_cpu_us_per_event" in r:
            cpu = ", ".join(f"{k} {v:.2f} s" for k, v in r["driver_cpu"].items())
            executors = ", ".join(f"{k} {v:.1f} s" for k, v in r["executor_cpu"].items())
            lines += [
                f"- plan: {r['rounds']} round(s), {r['slots']} slot(s)",
                f"- driver CPU: {r['driver_cpu_us_per_event']:.2f} us per event ({cpu})",
                f"- executors' CPU: {r['executor_cpu_us_per_event']:.1f} us per event"
                f" ({executors}); {r['executor_cores_busy']:.0%} of their cores busy",
            ]
        if "stages" in r:
            lines.append(stage_line(r["stages"], r["outside_stages_seconds"], r["seconds"]))
        if "execute_driver_cpu_us_per_event" in r:
            batches = r.get("batches") or [{}]
            lines.append(
                f"- execution (files in, batch executed, before the commit):"
                f" {r['execute_seconds']:.1f} s in all, {r['execute_seconds'] / len(batches):.1f}"
                f" s per batch; the driver's CPU {r['execute_driver_cpu_us_per_event']:.2f} us"
                " per event"
            )
        backends = r.get("cpu_seconds", {}).get("PostgreSQL backends")
        if r["approach"] == "pipeline" and backends and r.get("applied"):
            lines.append(
                f"- PostgreSQL's CPU per committed transaction: {backends * 1e6 / r['applied']:.0f}"
                " us (its backends over the run: the tasks' reads, the commits and the batch"
                " audits)"
            )
        if "audit_seconds" in r:
            lines.append(f"- batch audits after every batch: {r['audit_seconds']:.1f} s in all")
            parts = ", ".join(f"{k} {v:.1f} s" for k, v in r.get("audit_parts", {}).items())
            if parts:
                # The Merkle part runs beside the expectations part.
                lines.append(f"- batch audits by part: {parts}")
        batches = r.get("batches") or []
        if batches:
            first, last = batches[0], batches[-1]
            lines.append(
                f"- first batch: commit {first['commit_seconds']:.1f} s, audit"
                f" {first['audit_seconds']:.1f} s; last batch ({len(batches)}): commit"
                f" {last['commit_seconds']:.1f} s, audit {last['audit_seconds']:.1f} s"
            )
        for stage, report in r.get("tasks", {}).items():
            # Wall beside CPU: the difference is a task waiting, mostly on PostgreSQL.
            phases = ", ".join(
                f"{k} {v:.1f} ({report['seconds'].get(k, 0.0):.1f})"
                for k, v in report["cpu"].items()
            )
            lines.append(
                f"- tasks of {stage}: {report['tasks']} tasks, {report['items']:,} items,"
                f" CPU (wall) seconds by phase: {phases}"
            )
        work = transaction_work(r.get("tasks", {}))
        lines.append(
            f"- the tasks' transaction work (decode, read rows, execute): {work:.1f} CPU s,"
            f" {work / r['seconds']:.0%} of the wall time"
        )
        lines.append("")
    return "\n".join(lines) + "\n"


# Executor cores the projection is made for, and the database server's cores it assumes.
PROJECTED_CORES = (2, 4, 16, 64)
SERVER_CORES = 2


def stage_line(stages: list[dict[str, Any]], outside: float, seconds: float) -> str:
    """A Spark run's stages in one line: each stage's wall seconds and tasks, in order, and
    the seconds no stage covered (the driver's work and Spark's between jobs)."""
    spans = ", ".join(f"{s['end'] - s['start']:.1f} s x{s['tasks']}" for s in stages)
    return (
        f"- stages (wall s x tasks, in order): {spans}; outside every stage {outside:.1f} s"
        f" of {seconds:.1f}"
    )


def scale_on_paper(results: list[dict[str, Any]]) -> list[str]:
    """Markdown lines: the throughput projected for more executor cores from this run's
    measured parts, per uniform measurement of `spark-2` at the largest size.

    Four parts, each a cap on transactions per second: the executors' CPU per event (JVM
    and Python workers), which spreads over their cores, less the plan task's; the plan
    task's CPU per event (one task per batch) and the driver's, which do not; and, for the
    pipeline, PostgreSQL's CPU per committed event (commit and batch
    audit, from `pipeline-2`'s server processes), on a server of `SERVER_CORES` cores. The
    projection is the smallest cap: it assumes the per-event costs stay as measured (no
    network, a driver on a core of its own), so it is a ceiling, not a forecast.
    """
    largest = max((r["size"] for r in results), default=0)
    found = {
        r["variant"]: r
        for r in results
        if r["size"] == largest
        and r["workload"] == "uniform"
        and r["variant"] in ("spark-2", "pipeline-2")
    }
    spark = found.get("spark-2")
    if not spark or "executor_cpu_us_per_event" not in spark:
        return []
    plan_us = spark.get("plan_cpu_us_per_event", 0.0)
    executor_us = spark["executor_cpu_us_per_event"] - plan_us
    driver_us = spark["driver_cpu_us_per_event"]
    pipeline = found.get("pipeline-2")
    commit_us = None
    if pipeline and pipeline.get("applied"):
        backends = pipeline.get("cpu_seconds", {}).get("PostgreSQL backends")
        commit_us = backends * 1e6 / pipeline["applied"] if backends else None
    lines = [
        "",
        f"## Scale on paper (uniform, {largest:,} events)",
        "",
        f"From this run: executors {executor_us:.1f} us of CPU per event besides the plan"
        f" task's {plan_us:.2f}, driver {driver_us:.2f} us per event"
        + (
            f", PostgreSQL {commit_us:.0f} us per committed event (a server of"
            f" {SERVER_CORES} cores)"
            if commit_us
            else ""
        )
        + ". Each caps the throughput; the smallest limits (the pipeline's execution taken as"
        " `run_spark`'s).",
        "",
        "| executor cores | executors' cap | plan task's cap | driver's cap | `run_spark` |"
        " pipeline |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for cores in PROJECTED_CORES:
        caps = {"executors": cores * 1e6 / executor_us, "driver": 1e6 / driver_us}
        if plan_us:
            caps["plan task"] = 1e6 / plan_us
        spark_cap = min(caps.items(), key=lambda c: c[1])
        if commit_us:
            caps["PostgreSQL"] = SERVER_CORES * 1e6 / commit_us
        pipeline_cap = min(caps.items(), key=lambda c: c[1])
        lines.append(
            f"| {cores} | {caps['executors']:,.0f} |"
            + (f" {caps['plan task']:,.0f} |" if plan_us else " - |")
            + f" {caps['driver']:,.0f} |"
            f" {spark_cap[1]:,.0f} ({spark_cap[0]}) |"
            + (f" {pipeline_cap[1]:,.0f} ({pipeline_cap[0]}) |" if commit_us else " |")
        )
    return lines


def cpu_table(results: list[dict[str, Any]]) -> list[str]:
    """Markdown lines: each measurement's CPU seconds by kind of process beside the wall
    seconds of the same window, its whole process (setup included; on two cores the CPU is
    at most twice the wall)."""
    kinds = sorted({k for r in results for k in r.get("cpu_seconds", {})})
    if not kinds:
        return []
    lines = [
        "CPU seconds by process beside the wall seconds of the same window: the whole"
        " measuring process, setup included (the server's processes too; on two cores the"
        " CPU is at most twice the wall):",
        "",
        "| workload | variant | wall | " + " | ".join(kinds) + " | all |",
        "| --- | --- | ---: | " + " | ".join("---:" for _ in kinds) + " | ---: |",
    ]
    for r in results:
        cpu = r.get("cpu_seconds", {})
        cells = [f"{cpu[k]:.1f}" if k in cpu else "" for k in kinds]
        lines.append(
            f"| {r['workload']} | {r['variant']} | {r.get('sampled_seconds', 0.0):.1f} | "
            + " | ".join(cells)
            + f" | {sum(cpu.values()):.1f} |"
        )
    return [*lines, ""]


# The phases of a task's profile that are the transactions' own work: everything else is
# moving data in and out (input, sink) or waiting.
TRANSACTION_PHASES = ("decode", "read rows", "execute")


def transaction_work(tasks: dict[str, Any]) -> float:
    """CPU seconds the Spark tasks spent on the transactions themselves, over every stage."""
    return sum(
        seconds
        for report in tasks.values()
        for phase, seconds in report["cpu"].items()
        if phase in TRANSACTION_PHASES
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument(
        "--workloads",
        default=",".join(WORKLOADS),
        help=f"of {', '.join(WORKLOADS + GIANT_COMPONENT + ADD_PATH)}",
    )
    parser.add_argument("--accounts", type=int, default=1_000_000)
    parser.add_argument("--batch-events", type=int, default=100_000)
    parser.add_argument(
        "--run-accounts",
        type=int,
        default=100_000,
        help="accounts of the bank events `ledger-run` runs end to end",
    )
    parser.add_argument(
        "--skip",
        default="",
        help="measurements to leave out, comma-separated: a variant (postgres-1), a variant at"
        " a size (postgres-1@1000000), a workload at a size (hot@1000000), a variant of a"
        " workload (hot/postgres-8), or at a size (zipf/spark-1@1000000)",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    workloads = args.workloads.split(",")
    unknown = set(workloads) - set(WORKLOADS + GIANT_COMPONENT + ADD_PATH)
    if unknown:
        parser.error(f"unknown workloads: {', '.join(sorted(unknown))}")
    skip = set(filter(None, args.skip.split(",")))
    plan = [
        (size, workload, variant)
        for size in sizes
        for workload in workloads
        for variant in VARIANTS
        if not skipped(skip, size, workload, variant[0])
        and (variant[1] != "ledger-run" or workload == END_TO_END_WORKLOAD)
    ]
    work = Path(tempfile.mkdtemp(prefix="ledger-bench-"))
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    server = server_url(work)
    meta = {
        "stamp": stamp,
        "accounts": args.accounts,
        "postgres": "LEDGER_DATABASE_URL" if os.environ.get("LEDGER_DATABASE_URL") else "embedded",
        "cpus": os.cpu_count(),
        "batch_events": args.batch_events,
    }
    results: list[dict[str, Any]] = []
    text = ""
    rows: dict[tuple[str, int], dict[str, dict[str, Any]]] = {}
    watch = Stopwatch()
    try:
        # Seeded only for the measurements that run on a database (minutes at 10^6 accounts).
        on_database = any(variant[1] in ON_DATABASE for _, _, variant in plan)
        seed_data = seed(server, args, work)[1] if on_database else None
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
        ) as progress:
            task = progress.add_task("measuring", total=len(plan))
            for size, workload, (name, approach, options) in plan:
                progress.update(task, description=f"{workload} {size:,}: {name}")
                result = run_variant(
                    name, approach, options, args, workload, size, server, seed_data, work
                )
                results.append(result)
                rows.setdefault((workload, size), {})[name] = result
                progress.console.print(
                    f"{workload:>8} {size:>9,} {name:<11} {result['tps']:>10,.0f} tx/s"
                    f"  {result['seconds']:8.1f} s  {result['peak_mb']:7,.0f} MB"
                )
                # Written after every measurement: a run cut short keeps what it measured.
                meta["wall_seconds"] = watch.elapsed()
                text = write_results(stamp, meta, results, rows)
                progress.advance(task)
    finally:
        drop_database(server, RUN_DB)
    console.print(text)
    console.print(f"results: {RESULTS / (stamp + '.json')} and .md")


def skipped(skip: set[str], size: int, workload: str, variant: str) -> bool:
    """Whether `--skip` leaves out this measurement."""
    names = {
        variant,
        f"{variant}@{size}",
        f"{workload}@{size}",
        f"{workload}/{variant}",
        f"{workload}/{variant}@{size}",
    }
    return not skip.isdisjoint(names)


def write_results(
    stamp: str,
    meta: dict[str, Any],
    results: list[dict[str, Any]],
    rows: dict[tuple[str, int], dict[str, dict[str, Any]]],
) -> str:
    """Write `<stamp>.json` and `<stamp>.md` under `bench/results`; return the Markdown."""
    comparisons = ratios(rows)
    RESULTS.mkdir(parents=True, exist_ok=True)
    document = {"meta": meta, "results": results, "ratios": comparisons}
    (RESULTS / f"{stamp}.json").write_text(json.dumps(document, indent=2, default=str))
    text = markdown(results, comparisons, meta)
    (RESULTS / f"{stamp}.md").write_text(text)
    return text


if __name__ == "__main__":
    main()

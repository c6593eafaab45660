"""Soak test: kill the pipeline with SIGKILL at random moments while event files keep landing,
and prove after every round that the system of record holds exactly one clean run's outcome.

Each round lands a file of new events (with retries of earlier rounds' request ids, one with
a changed payload, and a faulty event), starts `ledger run`, lands another file while it runs,
and sends SIGKILL to the run's driver process at a random moment (unless it finished first).
Then `ledger run` runs to completion, and the round's check compares everything in PostgreSQL
with the serial runner over every file the batches took in
(`ledger_engine.audit.rederivation.oracle`), requires every landed file to be in exactly one
batch, and recomputes the Merkle roots and the batch chain. It prints rounds, kills and
mismatches; the exit status is 1 if any round mismatched. Not part of CI: 50 rounds take
about an hour.

    .venv/bin/python -m bench.soak --rounds 50

The pipeline runs on the embedded PostgreSQL in `--data-dir` (removed first) unless
`--database-url` names an empty database.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ledger_engine.apps.bank.generator import generate_events
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.audit.proof.verify import verify_ledger
from ledger_engine.audit.rederivation.oracle import serial_differences
from ledger_engine.config import PROJECT_ROOT, Settings
from ledger_engine.core.records import Event
from ledger_engine.core.stopwatch import Stopwatch
from ledger_engine.pipeline.event_inbox import write_event_files
from ledger_engine.store.database import open_store
from ledger_engine.store.embedded import stop_embedded

console = Console()


@dataclass
class Tally:
    rounds: int = 0
    kills: int = 0
    finished_before_kill: int = 0
    stragglers: int = 0  # processes of a killed run still alive 30 s after the kill
    mismatches: int = 0
    events: int = 0
    files: int = 0
    findings: list[str] = field(default_factory=list)


def round_events(round_: int, earlier: list[Event], rng: random.Random) -> list[Event]:
    """A round's new events (unique request ids), plus retries of earlier rounds' events:
    two identical (`exists`) and one with a changed amount (`exists_with_different_payload`)."""
    fresh = [
        Event(e.stream, f"r{round_}-{e.request_id}", e.payload)
        for e in generate_events(150, accounts=40, seed=round_, bad_fraction=0.02)
    ]
    if earlier:
        for event in rng.sample(earlier, 2):
            fresh.insert(rng.randrange(len(fresh)), event)
        changed = rng.choice(earlier)
        if isinstance(changed.payload, dict) and "amount" in changed.payload:
            payload = {**changed.payload, "amount": 1}
            fresh.insert(
                rng.randrange(len(fresh)), Event(changed.stream, changed.request_id, payload)
            )
    return fresh


def land(events: list[Event], inbox: Path, name: str) -> None:
    """One file, written under a hidden name and renamed into place."""
    write_event_files(events, inbox, events_per_file=len(events), prefix=name)


def ledger_run(env: dict[str, str]) -> subprocess.Popen[bytes]:
    # A session of its own: the run's JVM is in its process group, so that what outlives
    # the driver can be found (and is counted as a straggler).
    return subprocess.Popen(
        [sys.executable, "-m", "ledger_engine.cli", "run"],
        env={**os.environ, **env},
        cwd=PROJECT_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def kill_at_random(
    run: subprocess.Popen[bytes], max_seconds: float, rng: random.Random, tally: Tally
) -> str:
    """SIGKILL the run's driver at a random moment; say what happened."""
    delay = rng.uniform(0.5, max_seconds)
    try:
        run.wait(delay)
        tally.finished_before_kill += 1
        return f"finished before the kill at {delay:.1f} s (exit {run.returncode})"
    except subprocess.TimeoutExpired:
        pass
    run.send_signal(signal.SIGKILL)
    run.wait()
    tally.kills += 1
    deadline = time.monotonic() + 30
    while group_alive(run.pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    if group_alive(run.pid):
        tally.stragglers += 1
        os.killpg(run.pid, signal.SIGKILL)
    return f"killed at {delay:.1f} s"


def check(settings: Settings) -> list[str]:
    engine = open_store(settings)
    try:
        ledger = build_ledger()
        found = serial_differences(engine, ledger, settings.inbox)
        found += [
            f"{c.name}: {'; '.join(c.findings[:2])}"
            for c in verify_ledger(engine, ledger)
            if not c.passed
        ]
        return found
    finally:
        engine.dispose()


def soak(args: argparse.Namespace) -> Tally:
    data_dir = Path(args.data_dir).resolve()
    if data_dir.exists():
        shutil.rmtree(data_dir)
    env = {
        "LEDGER_DATA_DIR": str(data_dir),
        "LEDGER_FILES_PER_BATCH": "1",
        "LEDGER_SPARK_MASTER": args.spark_master,
        "LEDGER_RUN_WAIT_SECONDS": "120",
    }
    if args.database_url:
        env["LEDGER_DATABASE_URL"] = args.database_url
    settings = Settings.from_env(env)
    rng = random.Random(args.seed)
    tally = Tally()
    landed: list[Event] = []
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )
    try:
        with progress:
            task = progress.add_task("soak rounds", total=args.rounds)
            for round_ in range(args.rounds):
                events = round_events(round_, landed, rng)
                half = len(events) // 2
                land(events[:half], settings.inbox, f"soak-{round_:04d}-a")
                run = ledger_run(env)
                # Another file lands while the run is under way.
                late = threading.Timer(
                    rng.uniform(0, args.max_kill_seconds),
                    land,
                    (events[half:], settings.inbox, f"soak-{round_:04d}-b"),
                )
                late.start()
                what = kill_at_random(run, args.max_kill_seconds, rng, tally)
                late.join()
                landed.extend(events)
                completion = ledger_run(env)
                if completion.wait(args.round_timeout) != 0:
                    exit_code = completion.returncode
                    tally.findings.append(f"round {round_}: the completing run exited {exit_code}")
                found = check(settings)
                tally.rounds += 1
                tally.events = len(landed)
                tally.files = len(list(settings.inbox.glob("*.jsonl")))
                if found:
                    tally.mismatches += 1
                    tally.findings.extend(f"round {round_}: {f}" for f in found)
                status = "[green]ok" if not found else f"[red]{len(found)} differences"
                progress.console.print(f"round {round_:3d}: {what}; check {status}")
                progress.update(
                    task,
                    advance=1,
                    description=f"soak: {tally.kills} kills, {tally.mismatches} mismatches",
                )
    finally:
        if not args.database_url:
            stop_embedded(settings.pgdata)
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-kill-seconds", type=float, default=40.0, help="latest kill moment")
    parser.add_argument("--round-timeout", type=float, default=600.0)
    parser.add_argument("--data-dir", default="/tmp/ledger-soak")
    parser.add_argument("--database-url", help="an empty database (default: embedded)")
    parser.add_argument("--spark-master", default="local[2]")
    args = parser.parse_args(argv)
    watch = Stopwatch()
    tally = soak(args)
    for finding in tally.findings[:50]:
        console.print(f"[red]{finding}")
    console.print(
        f"rounds {tally.rounds}, kills {tally.kills}, finished before the kill "
        f"{tally.finished_before_kill}, stragglers {tally.stragglers}, files {tally.files}, "
        f"events {tally.events}, mismatches {tally.mismatches}, "
        f"{watch.elapsed() / 60:.1f} min"
    )
    return 1 if tally.mismatches or tally.findings else 0


if __name__ == "__main__":
    sys.exit(main())

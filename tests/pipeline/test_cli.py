"""The `ledger` command, run as a user runs it after the README's set-up (`.venv/bin/ledger`
from the project's folder), on the embedded defaults.

The demo of a user's ledger (a data folder and an embedded server of its own) starts with the
module and runs while the bank's demo and its commands run; its test waits for it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ledger_engine.config import PROJECT_ROOT
from tests.support.html_page import read_page
from tests.support.ledger_command import LEDGER as LEDGER_SCRIPT

LEDGER = [str(LEDGER_SCRIPT)]
# As the README types it, from the project's folder, where every command below runs.
TYPED = ".venv/bin/ledger"


def embedded_env(data_dir: Path) -> dict[str, str]:
    """This environment with the ledger's data in `data_dir` and no database URL: the embedded
    defaults, as on a fresh machine."""
    environment = {
        **os.environ,
        "LEDGER_DATA_DIR": str(data_dir),
        "LEDGER_SPARK_MASTER": "local[2]",
    }
    # No width given: output that is no terminal arrives unwrapped whatever its length.
    for setting in ("LEDGER_DATABASE_URL", "COLUMNS"):
        environment.pop(setting, None)
    return environment


def stop_embedded_server(environment: dict[str, str]) -> None:
    stopped = subprocess.run(
        [*LEDGER, "db", "stop"], env=environment, capture_output=True, text=True, cwd=PROJECT_ROOT
    )
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr


@pytest.fixture
def env(tmp_path: Path):
    environment = embedded_env(tmp_path)
    yield environment
    stop_embedded_server(environment)


def ledger(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LEDGER, *args], env=env, capture_output=True, text=True, timeout=600, cwd=PROJECT_ROOT
    )


@dataclass
class Started:
    """A `ledger` command started and not waited for; its output goes to two files (a pipe
    nobody reads would stop it once full)."""

    process: subprocess.Popen[bytes]
    stdout: Path
    stderr: Path

    def finished(self) -> subprocess.CompletedProcess[str]:
        """What `ledger` would have returned, once the command has ended."""
        self.process.wait(timeout=600)
        return subprocess.CompletedProcess(
            self.process.args,
            self.process.returncode,
            self.stdout.read_text(encoding="utf-8"),
            self.stderr.read_text(encoding="utf-8"),
        )


def start_ledger(env: dict[str, str], output: Path, *args: str) -> Started:
    """`ledger(env, *args)` started, its output in `output`.out and `output`.err."""
    stdout, stderr = output.with_suffix(".out"), output.with_suffix(".err")
    with stdout.open("wb") as out, stderr.open("wb") as err:
        process = subprocess.Popen(
            [*LEDGER, *args], env=env, stdout=out, stderr=err, cwd=PROJECT_ROOT
        )
    return Started(process, stdout, stderr)


SIMPLE_TRADE = Path(__file__).parents[1] / "support" / "apps" / "simple_trade.py"


@pytest.fixture(scope="module", autouse=True)
def simple_trade_demo(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[dict[str, str], Path, Started]]:
    """`ledger demo` of the simple trade example (a user's ledger, with its Great Expectations
    project in a folder of theirs, not ours), started as the module starts, in a data folder
    and on an embedded server of its own: its environment, its folder, its process."""
    data_dir = tmp_path_factory.mktemp("simple_trade_demo")
    environment = {
        **embedded_env(data_dir),
        "LEDGER_APP": f"{SIMPLE_TRADE}:build_ledger",
        "LEDGER_EXPECTATIONS": str(data_dir / "expectations"),
    }
    output = tmp_path_factory.mktemp("simple_trade_demo_output") / "demo"
    demo = start_ledger(environment, output, "demo", "--events", "400", "--rows", "10")
    try:
        yield environment, data_dir, demo
    finally:
        if demo.process.poll() is None:  # its test did not get to wait for it
            demo.process.kill()
        demo.process.wait()
        stop_embedded_server(environment)


def test_demo_runs_the_pipeline_and_every_audit_passes(env, tmp_path: Path) -> None:
    demo = ledger(env, "demo", "--events", "3000", "--accounts", "100")
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "3000" in demo.stdout and "FAILED" not in demo.stdout
    # Its two pages say the demo wrote them, and its reconciliation links to its audit: the
    # batches the run added are the ones both are about.
    [audit_page] = (tmp_path / "reports").glob("audit-*.html")
    [reconciliation_page] = (tmp_path / "reports").glob("reconciliation-*.html")
    for page in (audit_page, reconciliation_page):
        said = read_page(page).text_in("written-by")
        assert said.startswith("Written by command ledger demo, host "), said
    linked = read_page(reconciliation_page).find("a", inside="linked-pages")
    own_row = f"index.html#{reconciliation_page.stem}"
    assert [a.attrs["href"] for a in linked] == [audit_page.name, own_row]
    # The bank declares a statement source: the demo lands a day's statement with one
    # difference of each kind and reconciles it, leaving breaks to work.
    assert "landed a statement of" in demo.stdout
    assert "Main bank: breaks: amount_mismatch 1, duplicate 1" in demo.stdout
    breaks = ledger(env, "breaks")
    assert breaks.returncode == 1, breaks.stdout + breaks.stderr
    assert "Open breaks: 6" in breaks.stdout
    # Its dates are the movements' (dated by their batches' commit): it states its closing
    # balances as of the end of their last day, never a day after.
    late = ledger(
        env,
        "psql",
        "-tAc",
        "SELECT count(*) FROM ledger_statement_balances WHERE as_of >"
        " (SELECT date_trunc('day', max(committed_at), 'UTC') + interval '1 day'"
        " FROM ledger_batches)",
    )
    assert (late.returncode, late.stdout.strip()) == (0, "0"), late.stderr

    balance = ledger(env, "balance", "acct-000001")
    assert balance.returncode == 0, balance.stderr
    assert balance.stdout.startswith("acct-000001: ")

    psql = ledger(env, "psql", "-tAc", "SELECT count(*) FROM reconciled_balances")
    assert psql.returncode == 0, psql.stderr
    assert int(psql.stdout.strip()) == 100
    assert psql.stderr == "", "no warning of the embedded server's package"

    audit = ledger(env, "audit")
    assert audit.returncode == 0, audit.stdout

    tamper = ledger(
        env, "psql", "-c", "UPDATE accounts SET value = value + 1 WHERE key = 'acct-000002'"
    )
    assert tamper.returncode == 0, tamper.stderr
    # The batch audit covers batches since the last passing audit: none here. A row changed
    # behind the engine's back in an audited batch is the full audit's to find.
    assert ledger(env, "audit").returncode == 0
    audit = ledger(env, "audit", "--full")
    assert audit.returncode == 1
    assert "FAILED" in audit.stdout


def test_demo_runs_any_ledger_that_declares_sample_events(
    simple_trade_demo: tuple[dict[str, str], Path, Started],
) -> None:
    env, data_dir, started = simple_trade_demo
    expectations = data_dir / "expectations"
    demo = started.finished()
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "generated 400 events of ledger 'simple trade example'" in demo.stdout
    assert "FAILED" not in demo.stdout
    assert "ledger balance KEY --table bookEntries" not in demo.stdout
    # Its hints are typed as the demo was run (no `ledger` on the PATH after the set-up), and
    # say that the embedded server it started keeps running, and how to stop it.
    assert f"\n  {TYPED} balance KEY --table accounts\n" in demo.stdout
    assert f"stop it with: {TYPED} db stop" in demo.stdout and "keeps running" in demo.stdout
    assert demo.stdout.splitlines()[-1].startswith("demo passed in ")

    assert list(expectations.glob("simple_trade_example_*/gx/expectations/*.json"))

    balance = ledger(env, "balance", "BOOK-3", "--table", "bookEntries")
    assert balance.returncode == 0, balance.stderr
    assert balance.stdout.startswith("BOOK-3: ")

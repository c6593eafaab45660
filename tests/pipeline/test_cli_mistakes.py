"""The mistakes people make at the shell, as they make them with `.venv/bin/ledger`: each ends
in one or two lines saying what failed and what to do, with an exit status `ledger --help`
documents, and the traceback only when asked for (`--traceback`, or LEDGER_TRACEBACK=1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.ledger_command import ledger_env, libpq_form, run_ledger, said

EXIT_FOUND = 1
EXIT_SETTING = 3
EXIT_DATABASE = 4


@pytest.fixture
def server(pg_server_url: str) -> str:
    """LEDGER_DATABASE_URL of the test server's maintenance database, as a person writes it."""
    return libpq_form(pg_server_url)


def assert_told_briefly(done, status: int, *words: str) -> None:
    """The command ended with `status`, in at most two lines naming `words`, no traceback."""
    lines = said(done)
    assert done.returncode == status, lines
    assert 1 <= len(lines) <= 2, lines
    assert "Traceback" not in done.stdout + done.stderr
    for word in words:
        assert word in " ".join(lines), lines


def test_a_database_that_does_not_exist_is_named_with_what_to_do(server, tmp_path: Path):
    env = ledger_env(tmp_path, libpq_form(server, "ledger_no_such_database"))
    done = run_ledger(env, "balance", "acct-000001")
    assert_told_briefly(done, EXIT_DATABASE, '"ledger_no_such_database" does not exist', "createdb")


def test_a_refused_connection_says_so_before_any_progress_bar(tmp_path: Path):
    # Nothing listens on port 1 of this machine: the connection is refused at once.
    env = ledger_env(tmp_path, "postgresql://postgres@127.0.0.1:1/postgres")
    (tmp_path / "inbox").mkdir()
    done = run_ledger(env, "run")
    assert_told_briefly(
        done, EXIT_DATABASE, "127.0.0.1", "port 1", "refused", "LEDGER_DATABASE_URL"
    )
    assert "0/?" not in done.stdout + done.stderr and "micro-batch" not in done.stdout


def test_a_database_the_ledger_never_ran_in_says_how_to_begin(empty_database_url, tmp_path):
    env = ledger_env(tmp_path, libpq_form(empty_database_url))
    done = run_ledger(env, "balance", "acct-000001")
    assert_told_briefly(done, EXIT_FOUND, "no tables", "ledger db migrate", "ledger run")


def test_a_database_url_that_is_no_url_is_a_setting_to_fix(tmp_path: Path):
    done = run_ledger(ledger_env(tmp_path, "notaurl"), "request", "r-1")
    assert_told_briefly(done, EXIT_SETTING, "LEDGER_DATABASE_URL", "'notaurl'", "postgresql://")


def test_a_wrong_ledger_app_is_a_setting_to_fix(server, tmp_path: Path):
    env = ledger_env(tmp_path, server, LEDGER_APP="ledger_engine.apps.bank.ledgr:build_ledger")
    done = run_ledger(env, "balance", "acct-000001")
    assert_told_briefly(done, EXIT_SETTING, "LEDGER_APP", "ledger_engine.apps.bank.ledgr")


def test_a_setting_out_of_range_is_named(tmp_path: Path):
    done = run_ledger(ledger_env(tmp_path, None, LEDGER_FILES_PER_BATCH="0"), "run")
    assert_told_briefly(done, EXIT_SETTING, "LEDGER_FILES_PER_BATCH")


def test_an_embedded_server_folder_that_cannot_be_made_is_named(tmp_path: Path):
    (tmp_path / "a file").write_text("not a folder")
    folder = tmp_path / "a file" / "pgdata"
    env = ledger_env(tmp_path, None, LEDGER_PGDATA=str(folder))
    done = run_ledger(env, "balance", "acct-000001")
    assert_told_briefly(done, EXIT_SETTING, str(folder), "Not a directory", "LEDGER_PGDATA")


def test_the_traceback_is_shown_when_asked_for(tmp_path: Path):
    env = ledger_env(tmp_path, "notaurl")
    asked = run_ledger(env, "--traceback", "request", "r-1")
    assert asked.returncode == EXIT_SETTING
    assert "Traceback (most recent call last)" in asked.stderr
    assert "LEDGER_DATABASE_URL" in asked.stderr.splitlines()[-2]  # the sentence comes last
    by_setting = run_ledger({**env, "LEDGER_TRACEBACK": "1"}, "request", "r-1")
    assert "Traceback (most recent call last)" in by_setting.stderr


def test_help_documents_every_exit_status(tmp_path: Path):
    done = run_ledger(ledger_env(tmp_path, None), "--help")
    assert done.returncode == 0
    epilog = done.stdout.partition("exit status:")[2]
    for status in ("0", "1", "2", "3", "4", "70", "75", "130"):
        assert f"\n  {status} " in epilog, epilog
    assert "--traceback" in done.stdout and "LEDGER_TRACEBACK" in done.stdout
    table = (Path(__file__).parents[2] / "docs" / "exit-status.md").read_text(encoding="utf-8")
    for status in ("0", "1", "2", "3", "4", "70", "75", "130"):
        assert f"| {status} |" in table

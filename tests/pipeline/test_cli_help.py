"""What `ledger --help` and a command's `--help` tell a person who has only the shell: each
command in plain words, and where `generate` puts the events it writes."""

from __future__ import annotations

from pathlib import Path

from tests.support.ledger_command import ledger_env, run_ledger


def test_every_command_is_listed_in_plain_words(tmp_path: Path):
    done = run_ledger(ledger_env(tmp_path, None), "--help")
    assert done.returncode == 0, done.stderr
    assert "`cli." not in done.stdout and "cli.statements" not in done.stdout
    said = " ".join(done.stdout.split())
    assert "request, reconcile, statements, breaks, psql, db and airflow." in said


def test_generate_help_says_what_it_writes_and_names_the_inbox(tmp_path: Path):
    inbox = tmp_path / "my inbox"
    env = ledger_env(tmp_path, None, LEDGER_INBOX=str(inbox))
    done = run_ledger(env, "generate", "--help")
    assert done.returncode == 0, done.stderr
    description = done.stdout.split("\n\n")[1]
    assert description.startswith("Write the ledger's sample events"), done.stdout
    assert f"{inbox}/" in done.stdout.replace("\n", " ")
    assert "ledger run" in done.stdout

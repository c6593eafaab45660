"""What a `ledger` command checks before its work starts, so that a wrong setting or an
unreachable database is said in a sentence (`cli.failures`) before any progress bar is drawn
or Spark is started: the settings, the ledger LEDGER_APP names, the database URL, and a
connection."""

from __future__ import annotations

from collections.abc import Mapping

from ledger_engine.cli.failures import SettingProblem
from ledger_engine.config import Settings
from ledger_engine.core.declarations import StreamingLedger

APP_FORM = (
    "set LEDGER_APP to module:function or path/to/file.py:function, the function that builds "
    "your ledger (unset: the bank, ledger_engine.apps.bank.ledger:build_ledger)"
)


def read_settings(env: Mapping[str, str] | None = None) -> Settings:
    """The settings from the environment; one that cannot be used is a `SettingProblem`."""
    try:
        return Settings.from_env(env)
    except ValueError as wrong:
        raise SettingProblem(
            f"a setting is wrong: {wrong}\nfix it in the environment "
            "(every setting is listed in ledger_engine/config.py)"
        ) from wrong


def check_app(settings: Settings) -> StreamingLedger:
    """The ledger LEDGER_APP builds; a `SettingProblem` saying why where it cannot be built."""
    from ledger_engine.apps import load_ledger

    try:
        return load_ledger(settings.app)
    except Exception as wrong:  # whatever the app's import or build raised: the setting's
        words = " ".join(str(wrong).split()) or type(wrong).__name__
        raise SettingProblem(
            f"LEDGER_APP={settings.app!r} cannot be loaded: {type(wrong).__name__}: {words}\n"
            f"{APP_FORM}"
        ) from wrong


def check_database_url(settings: Settings) -> None:
    """A `SettingProblem` unless LEDGER_DATABASE_URL (where set) is a PostgreSQL URL."""
    from sqlalchemy import make_url
    from sqlalchemy.exc import ArgumentError

    given = settings.database_url
    if given is None:
        return
    try:
        backend = make_url(given).get_backend_name()
    except ArgumentError:
        backend = None
    if backend != "postgresql":
        raise SettingProblem(
            f"LEDGER_DATABASE_URL={given!r} is not a PostgreSQL URL\n"
            "give one as postgresql://USER[:PASSWORD]@HOST:PORT/DATABASE, or unset it to use "
            "the embedded server"
        )


def check_connection(settings: Settings, ledger: StreamingLedger) -> None:
    """Connect to the ledger's database once (starting the embedded server if it is the
    one), so that a database that cannot be reached is said before any work starts."""
    from ledger_engine.store.database import connect, database_url, ledger_url

    engine = connect(ledger_url(database_url(settings), ledger))
    try:
        with engine.connect():
            pass
    finally:
        engine.dispose()

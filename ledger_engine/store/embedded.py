"""The embedded PostgreSQL used when no `LEDGER_DATABASE_URL` is given.

`pgserver` ships a real PostgreSQL 16; it is started in a data folder of the project, listens
only on a Unix socket there, and keeps its data between commands.
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path

# pgserver asks platformdirs for a runtime folder (on import and when it starts a server),
# which headless machines lack; the fallback it then warns about (a folder under /tmp) is fine
# and the warning is only noise in the CLI.
warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")

import pgserver  # noqa: E402 - after the warning filter

# pgserver logs every command it runs, with its whole output, at INFO: chatter in a task log.
logging.getLogger("pgserver").setLevel(logging.WARNING)


def psql_path() -> Path:
    """The `psql` shipped with the embedded server (imported through this module, so that
    pgserver's runtime-folder warning stays filtered)."""
    from pgserver.postgres_server import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH) / "psql"


def start_embedded(pgdata: Path, *, keep_running: bool) -> str:
    """Start (or reuse) the server in `pgdata` and return its SQLAlchemy URL.

    With `keep_running`, the server outlives this process so that later commands and `psql` can
    reach it (`ledger db stop` stops it); otherwise it stops when this process exits.
    """
    pgdata.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(pgdata, cleanup_mode=None if keep_running else "stop")
    return to_sqlalchemy_url(server.get_uri())


STOP_WAIT_SECONDS = 600


def stop_embedded(pgdata: Path) -> bool:
    """Stop the embedded server in `pgdata` if one runs there; True if one was running.

    Calls `pg_ctl stop` directly: pgserver's own handles only stop a server when no other
    handle of the same process is open, which is not the case for a caller that started it.
    """
    if not (pgdata / "postmaster.pid").exists():
        return False
    # pgserver runs PostgreSQL as the user `pgserver` when started by root; stop it as that user.
    user = "pgserver" if os.geteuid() == 0 else None
    # Its shutdown checkpoint writes every dirty buffer: after a large run on a busy machine
    # that can outlast pg_ctl's default wait of 60 s, and a stop that gave up is no stop.
    pgserver.pg_ctl(["-w", "-t", str(STOP_WAIT_SECONDS), "stop"], pgdata=pgdata, user=user)
    return True


def to_sqlalchemy_url(uri: str) -> str:
    """`postgresql://...` as SQLAlchemy's psycopg2 URL."""
    if uri.startswith("postgresql://"):
        return "postgresql+psycopg2://" + uri.removeprefix("postgresql://")
    return uri

"""The breaks workbench served as Airflow's API server serves it, in a process of its own: the
plugin's application (`LedgerPlugin.fastapi_apps`) mounted at its prefix beside Airflow's own
auth manager (the simple one, with an `admin` and a `viewer`), so that every request is
authenticated and authorized by Airflow's code, as on the stack, without the stack's minutes
of start-up.

Run by `tests.support.workbench.served_workbench`:
`python -m tests.support.workbench_server PORT`, with `AIRFLOW_HOME` (a SQLite metadata
database there, holding the one table token checks read), the auth manager's settings and the
ledger's `LEDGER_*` settings in its environment. It prints one line, `tokens {...}`: a session
token of each user, then serves until it is terminated.
"""

from __future__ import annotations

import json
import sys

USERS = {"admin": "admin", "viewer": "viewer"}  # user -> the simple auth manager's role


def main(port: int) -> None:
    import uvicorn
    from airflow import settings
    from airflow.api_fastapi.app import init_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
    from airflow.models.revoked_token import RevokedToken
    from fastapi import FastAPI

    from ledger_engine.web.plugin import LedgerPlugin

    # Airflow checks every token against its revoked ones: that table alone is needed here.
    RevokedToken.metadata.create_all(settings.engine, tables=[RevokedToken.__table__])
    server = FastAPI()
    manager = init_auth_manager(server)
    for mounted in LedgerPlugin.fastapi_apps:
        server.mount(mounted["url_prefix"], mounted["app"])
    tokens = {
        user: manager.generate_jwt(SimpleAuthManagerUser(username=user, role=role))
        for user, role in USERS.items()
    }
    print("tokens", json.dumps(tokens), flush=True)
    uvicorn.run(server, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main(int(sys.argv[1]))

"""The suite's fresh migrated databases (`database_url`, `make_database_url()`: see
tests/conftest.py) are copies of one database migrated once for the session, made as if
migrated anew. Compared here with a database migrated from nothing, object by object and grant
by grant, so that a test on a copy tests what a migration makes."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Engine, make_url

from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.store.database import connect, ledger_url
from ledger_engine.store.identity import ledger_identity
from ledger_engine.store.migrations import migrate
from ledger_engine.store.schema import apply_declared_schema
from tests.support.database import rows

# What a migration leaves in the database and its schema: the grants on the database itself
# (grantee 0 is PUBLIC), the schema's, every relation and function with its owner and grants,
# and the migrations recorded.
CATALOG = {
    "database grants": "SELECT coalesce(pg_get_userbyid(nullif(a.grantee, 0)), 'PUBLIC'),"
    " a.privilege_type, a.is_grantable FROM pg_database d, aclexplode(d.datacl) a"
    " WHERE d.datname = current_database() ORDER BY 1, 2",
    "schema": "SELECT nspname, pg_get_userbyid(nspowner), nspacl::text FROM pg_namespace"
    " WHERE nspname = current_schema()",
    "relations": "SELECT c.relname, c.relkind, pg_get_userbyid(c.relowner), c.relacl::text"
    " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE n.nspname = current_schema() ORDER BY 1",
    "functions": "SELECT p.proname, pg_get_function_identity_arguments(p.oid),"
    " pg_get_userbyid(p.proowner), p.proacl::text, md5(p.prosrc)"
    " FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
    " WHERE n.nspname = current_schema() ORDER BY 1, 2",
    "migrations": "SELECT version, name, checksum FROM ledger_schema_migrations ORDER BY 1",
}


def catalog(engine: Engine) -> dict[str, list[tuple]]:
    return {part: rows(engine, query) for part, query in CATALOG.items()}


def test_a_fresh_test_database_is_what_migrating_a_new_one_makes(
    database_url: str,
    empty_database_url: str,
    engine_on: Callable[[str], Engine],
) -> None:
    migrated_url = ledger_url(empty_database_url, build_ledger())
    migrated = engine_on(migrated_url)
    migrate(migrated)
    apply_declared_schema(migrated, build_ledger())
    copy = engine_on(database_url)

    of_copy, of_migrated = catalog(copy), catalog(migrated)
    assert of_copy == of_migrated
    assert ("ledger_writer", "TEMPORARY", False) in of_copy["database grants"]
    assert ("PUBLIC", "TEMPORARY", False) not in of_copy["database grants"]
    assert len(of_copy["migrations"]) > 20 and len(of_copy["relations"]) > 50


def test_each_fresh_test_database_has_a_ledger_identity_of_its_own(
    make_database_url: Callable[..., str],
    migrated_template: str,
    engine_on: Callable[[str], Engine],
) -> None:
    first, second = make_database_url(), make_database_url()
    template = make_url(first).set(database=migrated_template)
    ids = []
    for url in (first, second, template):
        engine = connect(url)
        try:
            ids.append(ledger_identity(engine).database_id)
        finally:
            engine.dispose()  # the template must have no connection when it is copied next
    assert len(set(ids)) == 3
    # A copy of a test's database keeps its id, as any copy of a ledger does.
    copied = engine_on(make_database_url(template=first))
    assert ledger_identity(copied).database_id == ids[0]

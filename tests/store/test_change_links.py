"""Each row names its last change, and each commit links a key's first change in its batch to
the change before it (`sql/0025_change_links.sql`): what the batch audit's chain rule follows
across the edge of its scope.

The oracle is the change log itself, read back and ordered per key in Python: a key's first
change in a batch is linked to the key's change before it exactly when that change left a row
(a row deleted earlier names nothing, so its next change starts from nothing); each row names
the last change of its key.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg2 import sql
from sqlalchemy import Engine, text

from ledger_engine.apps.bank.ledger import build_ledger as bank_ledger
from ledger_engine.core.declarations import StreamingLedger
from ledger_engine.store.database import ledger_url
from ledger_engine.store.migrations import migrate
from ledger_engine.store.schema import apply_declared_schema
from tests.support.bank import deposit, transfer
from tests.support.database import rows
from tests.support.events import event_file
from tests.support.generated_apps import Names, build_ledger, workloads

Location = tuple[int, int, int]
Links = dict[Location, Location]
Named = dict[tuple[str, str], Location]


def oracle(engine: Engine) -> tuple[Links, Named]:
    """The links and the rows' last changes that the change log implies."""
    log = rows(
        engine,
        "SELECT table_name, key, batch_id, position, seq, after IS NOT NULL"
        " FROM ledger_change_log ORDER BY table_name, key, batch_id, position, seq",
    )
    links: Links = {}
    named: Named = {}
    for (table, key), changes in itertools.groupby(log, key=lambda c: (c[0], c[1])):
        before: tuple | None = None
        for change in changes:
            location = change[2:5]
            if before is not None and before[2] < change[2] and before[5]:
                links[location] = before[2:5]
            before = change
        if before is not None and before[5]:
            named[(table, key)] = before[2:5]
    return links, named


def stored(engine: Engine, ledger: StreamingLedger) -> tuple[Links, Named]:
    """The links the commits wrote and the last change each row names."""
    links = {
        tuple(r[:3]): tuple(r[3:])
        for r in rows(
            engine,
            "SELECT batch_id, position, seq, prev_batch, prev_position, prev_seq"
            " FROM ledger_change_links",
        )
    }
    named: Named = {}
    with engine.connect() as conn:
        cursor = conn.connection.cursor()
        for table in ledger.tables.values():
            cursor.execute(
                sql.SQL(
                    "SELECT CAST(key AS text), last_change_batch, last_change_position,"
                    " last_change_seq FROM {}"
                ).format(sql.Identifier(table.sql_name))
            )
            for key, *location in cursor.fetchall():
                named[(table.name, key)] = tuple(location)
    return links, named


def new_ledger(
    engine_on: Callable[[str], Engine], database_url: str, ledger: StreamingLedger, sql_dir=None
) -> Engine:
    engine = engine_on(ledger_url(database_url, ledger))
    migrate(engine, *([sql_dir] if sql_dir else []))
    apply_declared_schema(engine, ledger)
    return engine


# Labels that no identifier rule allows, so that every statement quotes its table.
_LABELS = Names("Links «{}» 'ü'", 'Table {} "q" €', "Stream {}: 'ü'")


def test_the_commits_link_what_the_change_log_implies_for_any_ledger(
    module_empty_database_url: str, engine_on, commit_files
) -> None:
    examples = itertools.count()

    @settings(
        max_examples=6,  # each batch costs a Spark commit
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(workload=workloads(max_events=30), cuts=st.lists(st.integers(0, 30), max_size=2))
    def committed_in_batches(workload, cuts: list[int]) -> None:
        n = next(examples)
        names = Names(_LABELS.ledger.format(n), _LABELS.table_pattern, _LABELS.stream_pattern)
        ledger = build_ledger(workload.app, names)
        engine = new_ledger(engine_on, module_empty_database_url, ledger)
        events = names.events(workload.events)
        bounds = [0, *sorted(min(c, len(events)) for c in cuts), len(events)]
        for batch_id, (low, high) in enumerate(itertools.pairwise(bounds)):
            batch = [(f"{batch_id:03d}.jsonl", event_file(events[low:high]))]
            commit_files(engine, batch_id, batch, ledger)

        assert stored(engine, ledger) == oracle(engine)

    committed_in_batches()


# --- A ledger committed before sql/0025 ---------------------------------------------------

_OLD_ROWS_VIEW = """CREATE VIEW ledger_rows AS
SELECT r.table_name, r.key, r.value, last_change.batch_id AS last_batch_id
FROM (
    SELECT CAST('accounts' AS text) AS table_name, CAST(t.key AS text) AS key,
           to_jsonb(t.value) AS value FROM accounts AS t
    UNION ALL
    SELECT CAST('asset_ledger' AS text), CAST(t.key AS text), to_jsonb(t.value)
    FROM asset_ledger AS t
) AS r
LEFT JOIN LATERAL (
    SELECT c.batch_id FROM ledger_change_log AS c
    WHERE c.key = r.key AND c.table_name = r.table_name
    ORDER BY c.batch_id DESC, c.position DESC, c.seq DESC LIMIT 1
) AS last_change ON true"""
_BEFORE_0025 = [
    # What 0025 adds, taken away again: the ledger as the commits before it left it, with the
    # rows view as the platform generated it then.
    "DROP VIEW ledger_rows",
    "DROP TABLE ledger_change_links",
    "ALTER TABLE accounts DROP COLUMN last_change_batch, DROP COLUMN last_change_position,"
    " DROP COLUMN last_change_seq",
    "ALTER TABLE asset_ledger DROP COLUMN last_change_batch, DROP COLUMN last_change_position,"
    " DROP COLUMN last_change_seq",
    "DROP FUNCTION ledger_track_last_changes",
    # What 0013 had made, which 0025 drops.
    "CREATE TABLE ledger_audit_last_changes (table_name text, key text, batch_id bigint,"
    " position integer, seq integer, PRIMARY KEY (table_name, key))",
    "CREATE TABLE ledger_audit_last_changes_through (only_row boolean PRIMARY KEY,"
    " through bigint, recent_from bigint)",
    "DELETE FROM ledger_schema_migrations WHERE version = '0025'",
    _OLD_ROWS_VIEW,
]
_ROWS = "SELECT table_name, key, value, last_batch_id FROM ledger_rows ORDER BY table_name, key"


def test_a_ledger_committed_before_0025_gets_the_links_its_commits_would_have_written(
    empty_database_url: str, engine_on, commit_files
) -> None:
    ledger = bank_ledger()
    engine = new_ledger(engine_on, empty_database_url, ledger)
    batches = [
        [deposit("d1", "alice", 100, asset_amount=3), deposit("d2", "bob", 5)],
        [transfer("t1", "alice", "bob", 30), deposit("d3", "carol", 7)],
        [deposit("d4", "carol", 1), transfer("t2", "bob", "alice", 2)],
        [deposit("d5", "dave", 9)],
    ]
    for batch_id, events in enumerate(batches):
        commit_files(engine, batch_id, [(f"{batch_id}.jsonl", event_file(events))])
    committed = stored(engine, ledger)
    assert committed == oracle(engine) and committed[0], "the commits linked changes"
    readers_saw = rows(engine, _ROWS)
    with engine.begin() as conn:
        for statement in _BEFORE_0025:
            conn.execute(text(statement))
    assert rows(engine, _ROWS) == readers_saw, "the view as it was reads the same"

    assert migrate(engine) == ["0025"]

    assert stored(engine, ledger) == committed
    assert rows(engine, _ROWS) == readers_saw
    assert rows(engine, "SELECT to_regclass('ledger_audit_last_changes')") == [(None,)]

"""Report pages as a busy ledger writes them, built in memory and rendered by the package's own
templates (no Spark, no PostgreSQL): an audit page of nine batches whose accounts total is
the largest a BIGINT sum reaches, an index of runs written by Airflow (long run ids, many
cross links), the first reconciliation of two sources (long statement file names, account
ids, IBANs, long references), and the breaks workbench's queue. The layout tests open them
in Chromium at a person's window widths (tests/audit/test_report_layout.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from starlette.requests import Request

from ledger_engine.audit.findings import BATCHES, AuditReport, AuditScope, CheckResult
from ledger_engine.core.money import Unit
from ledger_engine.report import (
    BatchRow,
    LedgerView,
    ThroughputPoint,
    Totals,
    render_index,
    render_page,
)
from ledger_engine.report.provenance import BatchSpan, Provenance
from ledger_engine.report.queries import TableTotal
from ledger_engine.report.reconciliation_context import reconciliation_context
from ledger_engine.report.reconciliation_queries import (
    DriftRow,
    OpenBreak,
    ReconciliationView,
    RunRow,
    StatementFile,
)
from ledger_engine.report.render import render_reconciliation

WRITTEN = datetime(2026, 12, 7, 19, 52, 11, tzinfo=UTC)
EUR = Unit("EUR", 2)
# The accounts' total past what a BIGINT holds (PostgreSQL sums BIGINTs as NUMERIC): the
# page must show every digit of it.
HUGE_TOTAL = 9_223_372_039_743_685_475
HUGE_TOTAL_TEXT = "92,233,720,397,436,854.75 EUR"
SMALL_RUN = 9  # batches 0..8: the throughput chart used to label 0, 2, 3, 5, 6 and 8 only
BY_AIRFLOW = Provenance.from_airflow(
    "ledger_pipeline", "scheduled__2026-12-07T19:50:00.123456+00:00", "write_audit_report"
)
RECONCILED_BY = Provenance.from_airflow(
    "ledger_reconcile", "manual__2026-12-07T19:51:02.654321+00:00", "reconcile"
)
ACCOUNTS = [f"acct-{n:06d}" for n in range(1, 13)]
IBANS = ["DE89370400440532013000", "DE02120300000000202051", "GB29NWBK60161331926819"]


# --- An audit page ---------------------------------------------------------------------------


def _batch(batch_id: int) -> BatchRow:
    ingested = 250_000 + 7_919 * batch_id
    return BatchRow(
        batch_id=batch_id,
        committed_at=WRITTEN - timedelta(minutes=SMALL_RUN - batch_id),
        ingested=ingested,
        applied=ingested - 120,
        rejected=120,
        duplicates=3,
        changes=2 * ingested,
        execute_seconds=1.25 + 0.1 * batch_id,
        commit_seconds=0.75,
        batch_hash=f"{batch_id:064x}",
        merkle_roots={"accounts": f"{batch_id:064x}", "asset_ledger": f"{batch_id + 1:064x}"},
    )


def ledger_view(
    batches: Sequence[BatchRow],
    *,
    rejections: Sequence[tuple[str, int]] = (),
    tables: Sequence[TableTotal] = (),
) -> LedgerView:
    """A ledger of `batches` (oldest first) as `read_ledger` reads it: every batch in the table
    and one chart point per batch, its totals their sums."""
    return LedgerView(
        totals=Totals(
            batches=len(batches),
            ingested=sum(b.ingested for b in batches),
            applied=sum(b.applied for b in batches),
            rejected=sum(b.rejected for b in batches),
            duplicates=sum(b.duplicates for b in batches),
            changes=sum(b.changes for b in batches),
        ),
        latest=list(reversed(batches)),
        throughput=[
            ThroughputPoint(
                b.batch_id, b.batch_id, b.ingested, b.execute_seconds + b.commit_seconds
            )
            for b in batches
        ],
        rejections=list(rejections),
        tables=list(tables),
    )


def busy_ledger(batches: int = SMALL_RUN) -> LedgerView:
    """A ledger of `batches` batches, one chart point each, whose accounts total is
    `HUGE_TOTAL` cents."""
    return ledger_view(
        [_batch(b) for b in range(batches)],
        rejections=[("invalid_event", 640), ("bad_key", 320), ("overflow", 120)],
        tables=[
            TableTotal("accounts", 1_048_576, HUGE_TOTAL, EUR),
            TableTotal("asset_ledger", 2_097_152, 4_611_686_018_427_387_904, None),
        ],
    )


def audit_outcome() -> AuditReport:
    """A batch audit with a failed check whose finding names an account."""
    finding = f"accounts: key {ACCOUNTS[0]} is 5, its change log folds to 4"
    return AuditReport(
        [
            CheckResult("merkle", "batch hash chain", True),
            CheckResult("merkle", "merkle root of accounts", True),
            CheckResult(
                "great_expectations",
                "accounts equals the fold of its change log",
                False,
                (finding,),
                "file:///srv/ledger/expectations/bank/gx/uncommitted/data_docs/local_site/"
                "validations/accounts_fold/20261207T195211Z/index.html",
            ),
            CheckResult("replay", "the change log equals a serial replay", True),
        ],
        scope=AuditScope(BATCHES, 0, SMALL_RUN - 1),
    )


def audit_page(folder: Path, batches: int = SMALL_RUN) -> Path:
    """The audit page of `busy_ledger(batches)`, written into `folder`."""
    html = render_page(audit_outcome(), busy_ledger(batches), WRITTEN, written_by=BY_AIRFLOW)
    return _written(folder / "audit-20261207T195211000000Z.html", html)


# --- The index -------------------------------------------------------------------------------


def _audit_summary(n: int) -> dict:
    return {
        "created": (WRITTEN - timedelta(hours=n)).isoformat(),
        "audit": {"kind": BATCHES, "first_batch": 100 * n, "last_batch": 100 * n + 99},
        "passed": n % 3 != 1,
        "checks": 14,
        "failed": 0 if n % 3 != 1 else 2,
        "failed_suites": [] if n % 3 != 1 else ["great_expectations", "pipeline"],
        "batches": 1_000 + n,
        "ingested": 123_456_789 + n,
        "applied": 123_400_000 + n,
        "rejected": 56_789,
        "duplicates": 4_321,
        "written_by": BY_AIRFLOW.to_dict(),
        "added": {
            "by": "run",
            **BatchSpan(100 * n, 100 * n + 99).to_dict(),
            "events": 2_500_000,
        },
    }


def _reconciliation_summary(n: int) -> dict:
    return {
        "created": (WRITTEN - timedelta(hours=n, minutes=1)).isoformat(),
        "written_by": RECONCILED_BY.to_dict(),
        "batches": BatchSpan(100 * n, 100 * n + 99).to_dict(),
        "run_ids": [2 * n, 2 * n + 1],
        "sources": ["Main bank (camt.053)", "Card acquirer settlement files"],
        "statement_matched": 12_345,
        "statement_items": 12_400,
        "ledger_matched": 12_345,
        "ledger_items": 12_398,
        "open_breaks": 108,
        "breaks_opened": 55,
        "breaks_closed": 47,
    }


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y%m%dT%H%M%S%fZ")


def index_page(folder: Path, runs: int = 6) -> Path:
    """The index of `runs` audit pages and as many reconciliations, each linked to the
    others of its batches, written into `folder`."""
    audits = [
        (Path(f"audit-{_stamp(WRITTEN - timedelta(hours=n))}.html"), _audit_summary(n))
        for n in range(runs)
    ]
    reconciliations = [
        (
            Path(f"reconciliation-{_stamp(WRITTEN - timedelta(hours=n, minutes=1))}.html"),
            _reconciliation_summary(n),
        )
        for n in range(runs)
    ]
    return _written(folder / "index.html", render_index(audits, reconciliations))


# --- The first reconciliation ----------------------------------------------------------------


def _run(run_id: int, source: str, files: list[str]) -> RunRow:
    return RunRow(
        run_id=run_id,
        source=source,
        who="airflow ledger_reconcile manual__2026-12-07T19:51:02.654321+00:00",
        started_at=WRITTEN - timedelta(seconds=40),
        finished_at=WRITTEN - timedelta(seconds=5),
        after_batch=-1,  # the first run of its source: every batch is new
        through_batch=SMALL_RUN - 1,
        after_file=0,
        through_file=len(files),
        statement_items=1_686,
        ledger_items=1_690,
        matches=1_640,
        breaks_opened=46,
        breaks_closed=0,
        statement_matched=1_640,
        ledger_matched=1_640,
        written_off=0,
        files=tuple(
            StatementFile(i, name, f"STMT-{i:04d}", 562, 0) for i, name in enumerate(files, 1)
        ),
    )


def _open_break(n: int, source: str, reason: str) -> OpenBreak:
    account = ACCOUNTS[n % len(ACCOUNTS)]
    return OpenBreak(
        break_id=n + 1,
        source=source,
        reason=reason,
        account=account,
        statement_amount=168_648 if reason != "missing_in_statement" else None,
        ledger_amount=168_600 if reason in ("amount_mismatch", "missing_in_statement") else None,
        amount_difference=48 if reason == "amount_mismatch" else None,
        booking_date=date(2026, 12, 7),
        statement_reference=f"NOTPROVIDED/E2E-{account}-2026-12-07-SEPA-CT-{n:08d}",
        statement_description="SEPA credit transfer",
        request_id=None,
        opened_at=WRITTEN - timedelta(days=n),
        age=timedelta(days=n, hours=3),
        write_off_request_id=f"write-off-{n:06d}-{account}" if n % 4 == 0 else None,
    )


REASONS = ("missing_in_ledger", "missing_in_statement", "amount_mismatch", "duplicate")


def first_reconciliation() -> ReconciliationView:
    """Two sources reconciled for the first time: three days of camt.053 files and a card
    acquirer's settlement files, twenty open breaks and drifting accounts."""
    bank_files = [f"camt053_{IBANS[0]}_2026-12-0{day}_statement.xml" for day in (5, 6, 7)]
    card_files = [f"settlement_report_merchant_000123456789_2026-12-0{d}.csv" for d in (6, 7)]
    runs = [
        _run(1, "Card acquirer settlement files", card_files),
        _run(2, "Main bank (camt.053)", bank_files),
    ]
    oldest = [_open_break(n, runs[n % 2].source, REASONS[n % len(REASONS)]) for n in range(20)]
    drift = [
        DriftRow(
            source="Main bank (camt.053)",
            table_name="accounts",
            account=account,
            statement_balance=HUGE_TOTAL // 1_000 + i,
            stated="2026-12-07",
            as_of=datetime(2026, 12, 8, tzinfo=UTC),
            ledger_balance_then=HUGE_TOTAL // 1_000,
            drift=i,
            ledger_balance_now=HUGE_TOTAL // 1_000 - 5_000,
        )
        for i, account in enumerate([*IBANS, *ACCOUNTS[:5]])
    ]
    return ReconciliationView(
        read_at=WRITTEN,
        runs=runs,
        open_by_reason_and_age={(reason, i % 4): 27 for i, reason in enumerate(REASONS)},
        opened_by_reason={reason: 11 for reason in REASONS},
        oldest=oldest,
        drift=drift,
        drift_accounts=len(drift),
        drifting_accounts=len(drift) - 1,
    )


def reconciliation_page(folder: Path) -> Path:
    """The page of `first_reconciliation()`, written into `folder`."""
    view = first_reconciliation()
    money = {source: EUR for source in view.sources}
    page = reconciliation_context(view, WRITTEN, written_by=RECONCILED_BY, money=money)
    name = f"reconciliation-{_stamp(WRITTEN)}.html"
    return _written(folder / name, render_reconciliation(page))


# --- The breaks workbench's queue ------------------------------------------------------------


def _request(path: str) -> Request:
    """A GET of `path` as the workbench receives it, mounted at /ledger in Airflow."""
    return Request(
        {
            "type": "http",
            "method": "GET",
            "scheme": "http",
            "server": ("127.0.0.1", 8080),
            "path": f"/ledger{path}",
            "root_path": "/ledger",
            "query_string": b"",
            "headers": [(b"host", b"127.0.0.1:8080"), (b"cookie", b"_token=a.session.token")],
        }
    )


def queue_page(folder: Path) -> Path:
    """The workbench's queue of `first_reconciliation()`'s open breaks, as a worker sees it
    (rendered by the workbench's own rows and page), written into `folder`."""
    from ledger_engine.config import NOTE_LIMIT
    from ledger_engine.reconcile.storage.queue import QueueFilter
    from ledger_engine.web.pages import page
    from ledger_engine.web.workbench import Kept, QueueRow, age_words

    request = _request("/breaks")
    rows = [
        QueueRow(
            break_id=item.break_id,
            url=f"/ledger/breaks/{item.break_id}",
            source=item.source,
            reason=item.reason.replace("_", " "),
            account=item.account,
            amount="1,686.48 EUR vs 1,686.00 EUR",
            reference=item.statement_reference or "",
            age=age_words(item.age),
            write_off="posted, waiting for the pipeline" if item.write_off_request_id else "",
        )
        for item in first_reconciliation().oldest
    ]
    response = page(
        request,
        "breaks.html",
        wanted=QueueFilter(),
        rows=rows,
        passing=len(rows) + 88,
        page_size=len(rows),
        open_total=108,
        source_choices=first_reconciliation().sources,
        reason_choices=[(r, r.replace("_", " ")) for r in REASONS],
        declared=first_reconciliation().sources,
        started=None,
        reconcile_url="/ledger/reconcile",
        ui_prefix="",
        kept=Kept(),
        user="admin",
        can_work=True,
        form_key="k" * 43,
        form_key_field="form_key",
        match_url="/ledger/breaks/match",
        note_limit=NOTE_LIMIT,
        said=None,
        refused=None,
    )
    return _written(folder / "breaks.html", response.body.decode())


def _written(path: Path, html: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    return path

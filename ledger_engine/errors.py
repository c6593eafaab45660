"""Every exception the platform raises on purpose, under one base: `LedgerError`.

A caller that wants "anything the ledger refused or could not do" catches `LedgerError`; each
class also keeps the built-in base its callers caught before (`ValueError` for input that is
wrong, `RuntimeError` for a state of the world that stops the work), so that both read naturally.
Grouped by the layer that raises them: declarations, execution, store, pipeline, audit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class LedgerError(Exception):
    """The common base of the platform's own exceptions."""


# --- declarations (core) -------------------------------------------------------------------


class DeclarationError(LedgerError, ValueError):
    """A ledger declaration that cannot run; the message names the problem."""


class NoSampleEvents(LedgerError, LookupError):
    """`ledger demo` or `ledger generate` asked for the sample events of a ledger that
    declares none."""

    def __init__(self, ledger_name: str) -> None:
        super().__init__(
            f"ledger {ledger_name!r} declares no sample events: declare them with "
            "ledger.declare_sample_events(fn), where fn(count, *, rows, seed) returns events, "
            "or land your own event files in the inbox (pipeline.event_inbox.write_event_files)"
        )


# --- execution (core, runtime) ---------------------------------------------------------------


class MissingRow(LedgerError, AssertionError):
    """A transaction touched a row its bin was not given: the schedule is broken."""


# --- the system of record (store) -------------------------------------------------------------


class SchemaMismatch(LedgerError, RuntimeError):
    """A declared table has no matching PostgreSQL table, or a declaration changed under
    stored rows in a way that would lose data."""


class MigrationError(LedgerError, RuntimeError):
    """The database's schema history does not match the migrations the platform has."""


class CommitRefused(LedgerError, RuntimeError):
    """The batch cannot be committed without corrupting the system of record."""


class LedgerBusy(LedgerError, RuntimeError):
    """Another run holds the lease and did not let go within the time allowed to wait."""


class Fenced(LedgerError, RuntimeError):
    """A write of a run whose lease another run has taken since: refused."""


class LeaseLost(LedgerError, RuntimeError):
    """The connection holding the run's lease is gone (the server restarted, or cut it
    off): the run must stop, since another run may take the lease at any moment."""


class InconsistentRequest(LedgerError, RuntimeError):
    """The stored events of a request id contradict each other (the audits find the cause)."""


class LoginError(LedgerError, ValueError):
    """A login cannot be created as asked (bad name, unknown role, no password, name taken)."""


# --- the pipeline -----------------------------------------------------------------------------


class BatchFailed(LedgerError, RuntimeError):
    """A micro-batch failed; the message says why (`cause`, one line) and what to do."""

    def __init__(self, batch_id: int, cause: str) -> None:
        super().__init__(
            f"micro-batch {batch_id} failed: {cause}. A batch commits in full "
            "or not at all, and a committed batch id is never committed again: run the "
            "pipeline again to complete it exactly once."
        )
        self.batch_id = batch_id


class CheckpointMismatch(LedgerError, RuntimeError):
    """The streaming checkpoint does not belong to the database and ledger of this run, or
    does not agree with its batches; the message names both and says what to do. Nothing was
    run, and no checkpoint was touched."""


# --- reconciliation ---------------------------------------------------------------------------


class SourcesError(LedgerError, ValueError):
    """The declaration of a ledger's statement sources cannot be used; the message names the
    source and the key."""


class NoSampleStatement(LedgerError, ValueError):
    """A sample statement cannot be written as asked (a source not in camt.053, no movement
    to report); the message says why."""


class ResolutionRefused(LedgerError, ValueError):
    """A break may not be matched by hand or written off as asked; the message says why."""


# --- the audits -------------------------------------------------------------------------------


class AuditFailed(LedgerError, RuntimeError):
    """At least one audit check failed; the message lists the failures (`CheckResult`s of
    `ledger_engine.audit`: each has a suite, a name and findings)."""

    def __init__(self, failures: Sequence[Any]) -> None:
        lines = [f"{c.suite}: {c.name}: {'; '.join(c.findings[:3])}" for c in failures]
        super().__init__(f"{len(failures)} audit check(s) failed:\n" + "\n".join(lines))
        self.failures = list(failures)

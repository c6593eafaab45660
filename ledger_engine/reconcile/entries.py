"""What a statement says, as records: its entries, the entries refused, its balances.

A parser turns one file's bytes into a `ParsedStatement`; every entry the file holds ends as
exactly one `StatementEntry` or one `EntryRejection` (with the reason and the entry's raw
bytes), and a file that cannot be read at all as one `EntryRejection` of the whole file
(`MALFORMED_FILE`), so the counts always add up. A file the parser read but the store could not
keep is kept the same way, as one rejection of the whole file (`UNLOADABLE`).

Amounts are signed integer minor units from the account holder's side: a credit (money into
the account) is positive, a debit negative, the way the ledger's own balances move.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from ledger_engine.core.records import INT64_MAX, INT64_MIN

# Why an entry was refused; each rejection also carries a sentence (`detail`) saying what.
MALFORMED_FILE = "malformed_file"  # the file as a whole cannot be read
MALFORMED = "malformed"  # the entry's bytes cannot be read as the format says
MISSING_FIELD = "missing_field"  # a field the source's mapping requires is absent or empty
BAD_AMOUNT = "bad_amount"  # not a decimal amount within the source's precision and int64
BAD_DATE = "bad_date"  # not a date in the source's format
BAD_INDICATOR = "bad_indicator"  # a credit/debit indicator the source does not know
UNKNOWN_ACCOUNT = "unknown_account"  # an account the source maps to no ledger key
CURRENCY_MISMATCH = "currency_mismatch"  # an amount in another currency than the source's
NOT_BOOKED = "not_booked"  # a pending or informational entry: reported, but no money moved yet
UNLOADABLE = "unloadable"  # the file as a whole was read, but the store could not keep it
# The reasons of a rejection of a whole file (position 0), not of one of its entries.
FILE_REASONS = frozenset({MALFORMED_FILE, UNLOADABLE})

REASONS = frozenset(
    {
        MALFORMED_FILE,
        MALFORMED,
        MISSING_FIELD,
        BAD_AMOUNT,
        BAD_DATE,
        BAD_INDICATOR,
        UNKNOWN_ACCOUNT,
        CURRENCY_MISMATCH,
        NOT_BOOKED,
        UNLOADABLE,
    }
)


@dataclass(frozen=True)
class StatementEntry:
    """One movement the statement reports on the ledger row `account` (a key of the source's
    table), at `position` in the file (1-based: a CSV line number, a camt.053 entry's
    ordinal)."""

    position: int
    account: str
    amount: int
    booking_date: date
    value_date: date | None
    reference: str | None
    servicer_reference: str | None
    description: str | None
    raw: bytes

    def __post_init__(self) -> None:
        assert self.position >= 1, self.position
        assert INT64_MIN <= self.amount <= INT64_MAX, self.amount
        assert isinstance(self.account, str) and self.account, self.account


@dataclass(frozen=True)
class EntryRejection:
    """An entry (or, for a reason of `FILE_REASONS`, a whole file at position 0) that was not
    loaded."""

    position: int
    reason: str
    detail: str
    raw: bytes

    def __post_init__(self) -> None:
        assert self.reason in REASONS, self.reason
        assert (self.position == 0) == (self.reason in FILE_REASONS), (self.position, self.reason)


@dataclass(frozen=True)
class StatementBalance:
    """A balance the statement states for a ledger row, in minor units, dated as the statement
    dates it (`stated`: a day, or a date-time in the bank's own offset); the `statement` of the
    file that states it (1, 2, ... in the file's order: a file may hold several statements of
    one account, each with its balances)."""

    account: str
    opening: int | None
    closing: int
    stated: date | datetime
    statement: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.stated, datetime):
            assert self.stated.tzinfo is not None, "a balance's date-time is an absolute time"
        assert self.statement >= 1, self.statement

    @property
    def as_of(self) -> datetime:
        """The moment the balance holds at, which the ledger's balance is compared as of: a
        date-time as stated; a day's balance at the end of that day, which is the next
        midnight (UTC), exclusive: a movement committed on the day is before it."""
        return balance_moment(self.stated)

    @property
    def stated_text(self) -> str:
        """`stated` as ISO 8601 text, the day or the date-time with its offset, as kept."""
        return self.stated.isoformat()


@dataclass(frozen=True)
class ParsedStatement:
    """Everything read from one statement file."""

    statement_id: str | None
    entries: tuple[StatementEntry, ...]
    rejections: tuple[EntryRejection, ...]
    balances: tuple[StatementBalance, ...] = ()

    def __post_init__(self) -> None:
        positions = [e.position for e in self.entries] + [r.position for r in self.rejections]
        assert len(positions) == len(set(positions)), "an entry ends as exactly one outcome"

    @property
    def count(self) -> int:
        """Entries read: loaded plus rejected."""
        return len(self.entries) + len(self.rejections)


def balance_moment(stated: date | datetime) -> datetime:
    """The moment a balance stated as of `stated` holds at (`StatementBalance.as_of`); raises
    `OverflowError` for a day that has no end (9999-12-31): such a balance cannot be kept."""
    if isinstance(stated, datetime):
        return stated
    return datetime.combine(stated + timedelta(days=1), time(0), tzinfo=UTC)


def rejected_file(detail: str, raw: bytes) -> ParsedStatement:
    """The outcome of a file that cannot be read at all: one rejection holding all of it."""
    return ParsedStatement(None, (), (EntryRejection(0, MALFORMED_FILE, detail, raw),))

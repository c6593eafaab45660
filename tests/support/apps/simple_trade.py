"""The seed's simple trade example (da-streamingledger's `SimpleTradeExample`), as a user of
the platform would write it: a module of their own, outside the platform's package, loaded
with `LEDGER_APP=tests/support/apps/simple_trade.py:build_ledger`.

Two tables, with the seed's names (labels, not SQL identifiers): `accounts` and
`bookEntries`, both id -> int64 minor units. Two streams:

- `deposits`: `{accountId, bookEntryId, accountTransfer, bookEntryTransfer}` adds to both.
- `transactions`: `{sourceAccountId, targetAccountId, sourceBookEntryId, targetBookEntryId,
  accountTransfer, bookEntryTransfer, minAccountBalance}` moves both amounts from source to
  target if the precondition holds: the source account keeps at least `minAccountBalance`
  and the source book entry does not go negative. It emits the result either way.

It declares its rules beside them, for the audits: both totals are conserved (they grow by
deposits only), transactions move nothing, and no row goes below 0.

Nothing here imports test code: Spark's executors receive this file by itself.
"""

from __future__ import annotations

import random
from typing import Any

from ledger_engine import AccessType, Event, StreamingLedger
from ledger_engine.core.invariants import balanced, conserved, minimum

DEPOSIT_FIELDS = {"accountId", "bookEntryId", "accountTransfer", "bookEntryTransfer"}
TRANSACTION_FIELDS = {
    "sourceAccountId",
    "targetAccountId",
    "sourceBookEntryId",
    "targetBookEntryId",
    "accountTransfer",
    "bookEntryTransfer",
    "minAccountBalance",
}


def deposit(event: dict[str, Any], ctx, account, book_entry) -> None:
    account.write(account.read_or(0) + event["accountTransfer"])
    book_entry.write(book_entry.read_or(0) + event["bookEntryTransfer"])


def transaction(event: dict[str, Any], ctx, source, target, source_entry, target_entry) -> None:
    amount, entries = event["accountTransfer"], event["bookEntryTransfer"]
    balance, entry = source.read_or(0), source_entry.read_or(0)
    success = balance - amount >= event["minAccountBalance"] and entry - entries >= 0
    if success:
        source.write(balance - amount)
        target.write(target.read_or(0) + amount)
        source_entry.write(entry - entries)
        target_entry.write(target_entry.read_or(0) + entries)
    ctx.emit({"success": success, "sourceBalance": source.read_or(0)})


def build_ledger() -> StreamingLedger:
    ledger = StreamingLedger.create("simple trade example")
    accounts = ledger.declare_state("accounts", key_type=str, value_type=int)
    book_entries = ledger.declare_state("bookEntries", key_type=str, value_type=int)
    (
        ledger.using_stream("deposits")
        .apply(deposit)
        .payload_fields(DEPOSIT_FIELDS)
        .on(accounts, lambda e: e["accountId"], "account", AccessType.READ_WRITE)
        .on(book_entries, lambda e: e["bookEntryId"], "book_entry", AccessType.READ_WRITE)
    )
    (
        ledger.using_stream("transactions")
        .apply(transaction)
        .payload_fields(TRANSACTION_FIELDS)
        .on(accounts, lambda e: e["sourceAccountId"], "source", AccessType.READ_WRITE)
        .on(accounts, lambda e: e["targetAccountId"], "target", AccessType.READ_WRITE)
        .on(book_entries, lambda e: e["sourceBookEntryId"], "source_entry", AccessType.READ_WRITE)
        .on(book_entries, lambda e: e["targetBookEntryId"], "target_entry", AccessType.READ_WRITE)
    )
    # The rules the audits check: value enters by deposits only, transactions move it without
    # creating any, and the precondition keeps every account and book entry from going below 0.
    for table, field in (("accounts", "accountTransfer"), ("bookEntries", "bookEntryTransfer")):
        ledger.declare_invariant(conserved(table, {"deposits": field}))
        ledger.declare_invariant(balanced(table, ["transactions"]))
        ledger.declare_invariant(minimum(table, 0))
    ledger.declare_sample_events(demo_events)
    ledger.check()
    return ledger


def sample_events(count: int, accounts: int = 20, seed: int = 0) -> list[Event]:
    """A deposit per account and book entry, then `count` transactions between random ones
    (some failing their precondition), as the seed's generators make them."""
    rng = random.Random(seed)
    events = [
        Event(
            "deposits",
            f"deposit-{n}",
            {
                "accountId": f"ACCT-{n}",
                "bookEntryId": f"BOOK-{n}",
                "accountTransfer": rng.randint(100, 1_000),
                "bookEntryTransfer": rng.randint(10, 100),
            },
        )
        for n in range(accounts)
    ]
    for n in range(count):
        source, target = rng.randrange(accounts), rng.randrange(accounts)
        payload = {
            "sourceAccountId": f"ACCT-{source}",
            "targetAccountId": f"ACCT-{target}",
            "sourceBookEntryId": f"BOOK-{source}",
            "targetBookEntryId": f"BOOK-{target}",
            "accountTransfer": rng.randint(1, 400),
            "bookEntryTransfer": rng.randint(1, 40),
            "minAccountBalance": rng.choice([0, 0, 50, 200]),
        }
        events.append(Event("transactions", f"transaction-{n}", payload))
    return events


def demo_events(count: int, *, rows: int, seed: int) -> list[Event]:
    """The declared sample for `ledger demo` and `ledger generate`: exactly `count` events, a
    deposit for each of the first `rows` accounts and book entries, then transactions."""
    deposits = min(count, rows)
    return sample_events(count - deposits, accounts=deposits, seed=seed)

"""The seed use case: accounts and an asset ledger, moved by deposits and transfers.

Tables: `accounts` (account id -> balance, in euro cents: unit `EUR/2`) and `asset_ledger`
(asset entry id -> quantity, in whole units: unit `units/0`), both integers. Streams:

- `deposits`: `{"account_id", "asset_id", "amount", "asset_amount"}` credits both rows.
- `transfers`: `{"source_account_id", "target_account_id", "source_asset_id",
  "target_asset_id", "amount", "asset_amount", "min_balance"}` moves `amount` between accounts
  and `asset_amount` between asset entries, only if the source balance exceeds both
  `min_balance` (default 0) and `amount`, and the source asset exceeds `asset_amount`. It always
  emits a result: `SUCCESS` with the new balances, or `REJECT` with the unchanged ones.
- `fee_transfers`: a transfer that also pays `fee` (a non-negative integer) from the source
  account to `fee_account_id`: applied only if the source balance also exceeds
  `amount + fee`. The fee account is only ever credited (an ADD), so a parallel runner need not
  order the transfers that all pay into one fee account.
- `balance_lookups`: `{"account_id"}` emits the balance, read-only.
- `adjustments`: `{"account_id", "amount"}` changes the account by `amount` (a non-zero
  integer of either sign) unless that would take it below zero: the adjusting event that
  reconciliation posts when a person writes a break off (`ledger breaks write-off`), so that
  the money trail stays in the ledger. Money conserved: the accounts' total equals the
  applied deposits plus the applied adjustments.

Deposits, transfers and fee transfers may also carry what reconciliation matches a movement
by: `reference` (the payment's external reference, 1 to 140 characters), `value_date`
(`YYYY-MM-DD`) and `description` (1 to 500 characters); a malformed one aborts the event.

Each stream declares its payload's fields (those above; `min_balance` and the three details
are optional): an event missing one, or carrying any other (a typo such as `ammount`), is
rejected as `invalid_event` with a detail naming the field. Amounts must be positive
integers: a float, a string, a negative or a zero amount aborts the event with a reason, and
an amount, fee or minimum balance beyond the int64 range is an `overflow`. A self-transfer
binds one row twice; the bindings share one buffer, so it nets to zero instead of creating
money as Flink's serial runtime would. Deposits and asset credits are ADDs: they never read
the row, so a runner need not order them against each other.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from operator import itemgetter
from pathlib import Path
from typing import Any

from ledger_engine.apps.bank.generator import sample_events
from ledger_engine.core.declarations import AccessType, StreamingLedger
from ledger_engine.core.invariants import balanced, conserved, minimum
from ledger_engine.core.records import INT64_MAX, INT64_MIN, OVERFLOW
from ledger_engine.core.storable import Problem, brief, is_int
from ledger_engine.core.transaction import Context, StateAccess

# The bank's views for people and reports, one SELECT per file (`reconciled_balances`, ...).
VIEWS_DIR = Path(__file__).with_name("views")
VIEWS = ("reconciled_balances", "account_statements")
# What the tables' integers count (`ledger_engine.core.money`): accounts hold euro cents. An
# asset entry holds a quantity of an asset (whole units moved by `asset_amount`), not money in
# a currency: so it declares a unit that says so, in whole units, rather than a currency it is
# not (and rather than no unit, so that its figures read as quantities of something).
ACCOUNTS_UNIT = "EUR/2"
ASSETS_UNIT = "units/0"
SUCCESS = "SUCCESS"
REJECT = "REJECT"


def _positive_amount(event: dict[str, Any], field: str, ctx: Context) -> int:
    value = event.get(field)
    if type(value) is int and 0 < value <= INT64_MAX:  # the common case, decided at once
        return value
    if not is_int(value) or value <= 0:
        ctx.abort(f"{field} must be a positive integer, got {brief(value)}")
    return _int64(value, field, ctx)


def _int64(value: int, field: str, ctx: Context) -> int:
    """Money is int64 minor units: a larger number is an overflow, not a large transfer."""
    if not INT64_MIN <= value <= INT64_MAX:
        ctx.fail(Problem(OVERFLOW, f"{field} {brief(value)} is outside the int64 range"))
    return value


# What reconciliation matches a movement by, where the client gives it: the payment's external
# reference (an end-to-end id: SEPA allows 35 characters, we keep room for others' longer
# ones), its value date (ISO 8601, YYYY-MM-DD) and a description (remittance text).
DETAIL_FIELDS = frozenset({"reference", "value_date", "description"})
_DETAIL_LIMITS = {"reference": 140, "description": 500}


def _check_details(event: dict[str, Any], ctx: Context) -> None:
    """Abort unless the optional detail fields present are well-formed."""
    for field, limit in _DETAIL_LIMITS.items():
        value = event.get(field)
        if value is not None and (type(value) is not str or not 0 < len(value) <= limit):
            ctx.abort(f"{field} must be text of 1 to {limit} characters, got {brief(value)}")
    value_date = event.get("value_date")
    if value_date is not None and not _is_iso_date(value_date):
        ctx.abort(f"value_date must be a date as YYYY-MM-DD, got {brief(value_date)}")


def _is_iso_date(value: object) -> bool:
    if type(value) is not str or len(value) != 10:
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


def deposit(event: dict[str, Any], ctx: Context, account: StateAccess, asset: StateAccess) -> None:
    """Credit the account and the asset entry named by the deposit."""
    if len(event) > len(DEPOSIT_FIELDS):  # only then can a detail field be there
        _check_details(event, ctx)
    account.add(_positive_amount(event, "amount", ctx))
    asset.add(_positive_amount(event, "asset_amount", ctx))


def transfer(
    event: dict[str, Any],
    ctx: Context,
    source_account: StateAccess,
    target_account: StateAccess,
    source_asset: StateAccess,
    target_asset: StateAccess,
) -> None:
    """Move money and assets from source to target if the source can afford it."""
    _move(event, ctx, source_account, target_account, source_asset, target_asset, None)


def fee_transfer(
    event: dict[str, Any],
    ctx: Context,
    source_account: StateAccess,
    target_account: StateAccess,
    source_asset: StateAccess,
    target_asset: StateAccess,
    fee_account: StateAccess,
) -> None:
    """A transfer whose source also pays `fee` into the fee account."""
    _move(event, ctx, source_account, target_account, source_asset, target_asset, fee_account)


def _move(
    event: dict[str, Any],
    ctx: Context,
    source_account: StateAccess,
    target_account: StateAccess,
    source_asset: StateAccess,
    target_asset: StateAccess,
    fee_account: StateAccess | None,
) -> None:
    amount = _positive_amount(event, "amount", ctx)
    asset_amount = _positive_amount(event, "asset_amount", ctx)
    if len(event) > len(TRANSFER_FIELDS):  # only then can a detail field be there
        _check_details(event, ctx)
    min_balance = event.get("min_balance", 0)
    if not (type(min_balance) is int and INT64_MIN <= min_balance <= INT64_MAX):
        if not is_int(min_balance):
            ctx.abort(f"min_balance must be an integer, got {brief(min_balance)}")
        _int64(min_balance, "min_balance", ctx)
    fee = 0
    if fee_account is not None:
        fee = event.get("fee")
        if not is_int(fee) or fee < 0:
            ctx.abort(f"fee must be a non-negative integer, got {brief(fee)}")
        _int64(fee, "fee", ctx)
    balance = source_account.read_or(0)
    asset_value = source_asset.read_or(0)
    if balance > min_balance and balance > amount + fee and asset_value > asset_amount:
        source_account.write(balance - amount - fee)
        target_account.write(target_account.read_or(0) + amount)
        source_asset.write(asset_value - asset_amount)
        target_asset.add(asset_amount)
        if fee_account is not None:
            fee_account.add(fee)
        status = SUCCESS
    else:
        status = REJECT
    ctx.emit(
        {
            "status": status,
            "source_account_id": event["source_account_id"],
            "target_account_id": event["target_account_id"],
            "source_balance": source_account.read_or(0),
            "target_balance": target_account.read_or(0),
        }
    )


def adjustment(event: dict[str, Any], ctx: Context, account: StateAccess) -> None:
    """Change the account by the signed `amount`, never below zero."""
    amount = event.get("amount")
    if not is_int(amount) or amount == 0:
        ctx.abort(f"amount must be a non-zero integer, got {brief(amount)}")
    _int64(amount, "amount", ctx)
    if len(event) > len(ADJUSTMENT_FIELDS):  # only then can a detail field be there
        _check_details(event, ctx)
    balance = _int64(account.read_or(0) + amount, "the adjusted balance", ctx)
    if balance < 0:
        ctx.abort(f"the adjustment would take the balance to {balance}, below 0")
    account.write(balance)
    ctx.emit({"status": SUCCESS, "account_id": event["account_id"], "balance": balance})


def balance_lookup(event: dict[str, Any], ctx: Context, account: StateAccess) -> None:
    """Emit the account's balance (0 for an account never credited)."""
    ctx.emit({"account_id": event["account_id"], "balance": account.read_or(0)})


def _field(name: str) -> Callable[[dict[str, Any]], Any]:
    """The key function that reads payload field `name` (an `itemgetter`: a call in C, where
    a Python function would cost a frame per binding per event)."""
    return itemgetter(name)


# The payload fields of each stream (`min_balance` defaults to 0).
DEPOSIT_FIELDS = frozenset({"account_id", "asset_id", "amount", "asset_amount"})
TRANSFER_FIELDS = frozenset(
    {
        "source_account_id",
        "target_account_id",
        "source_asset_id",
        "target_asset_id",
        "amount",
        "asset_amount",
    }
)
FEE_TRANSFER_FIELDS = TRANSFER_FIELDS | {"fee", "fee_account_id"}
LOOKUP_FIELDS = frozenset({"account_id"})
ADJUSTMENT_FIELDS = frozenset({"account_id", "amount"})
OPTIONAL_TRANSFER_FIELDS = frozenset({"min_balance"}) | DETAIL_FIELDS


def _declare_rules(ledger: StreamingLedger) -> None:
    """What the bank's money may do, for the audits: it enters only by deposits (and, for
    accounts, by the adjustments that write reconciliation breaks off), transfers move it
    without creating any, and no balance or asset amount goes below zero."""
    tables = (
        ("accounts", "amount", "account balance"),
        ("asset_ledger", "asset_amount", "asset amount"),
    )
    ledger.declare_invariant(
        conserved(
            "accounts",
            {"deposits": "amount", "adjustments": "amount"},
            name="accounts total equals applied deposits and adjustments",
        )
    )
    ledger.declare_invariant(
        conserved(
            "asset_ledger",
            {"deposits": "asset_amount"},
            name="asset_ledger total equals applied deposits",
        )
    )
    for table, _, _ in tables:
        name = f"applied transfers move nothing in {table}"
        ledger.declare_invariant(balanced(table, ("transfers", "fee_transfers"), name=name))
    for table, _, unit in tables:
        ledger.declare_invariant(minimum(table, 0, name=f"no {unit} below 0"))


def build_ledger() -> StreamingLedger:
    """The bank ledger: tables, streams and their bindings, and the views people query."""
    ledger = StreamingLedger.create("bank")
    accounts = ledger.declare_state("accounts", key_type=str, value_type=int, unit=ACCOUNTS_UNIT)
    assets = ledger.declare_state("asset_ledger", key_type=str, value_type=int, unit=ASSETS_UNIT)
    (
        ledger.using_stream("deposits")
        .apply(deposit)
        .payload_fields(DEPOSIT_FIELDS, DETAIL_FIELDS)
        .on(accounts, _field("account_id"), "account", AccessType.ADD)
        .on(assets, _field("asset_id"), "asset", AccessType.ADD)
    )
    (
        ledger.using_stream("transfers")
        .apply(transfer)
        .payload_fields(TRANSFER_FIELDS, OPTIONAL_TRANSFER_FIELDS)
        .on(accounts, _field("source_account_id"), "source_account", AccessType.READ_WRITE)
        .on(accounts, _field("target_account_id"), "target_account", AccessType.READ_WRITE)
        .on(assets, _field("source_asset_id"), "source_asset", AccessType.READ_WRITE)
        .on(assets, _field("target_asset_id"), "target_asset", AccessType.ADD)
    )
    (
        ledger.using_stream("fee_transfers")
        .apply(fee_transfer)
        .payload_fields(FEE_TRANSFER_FIELDS, OPTIONAL_TRANSFER_FIELDS)
        .on(accounts, _field("source_account_id"), "source_account", AccessType.READ_WRITE)
        .on(accounts, _field("target_account_id"), "target_account", AccessType.READ_WRITE)
        .on(assets, _field("source_asset_id"), "source_asset", AccessType.READ_WRITE)
        .on(assets, _field("target_asset_id"), "target_asset", AccessType.ADD)
        .on(accounts, _field("fee_account_id"), "fee_account", AccessType.ADD)
    )
    (
        ledger.using_stream("balance_lookups")
        .apply(balance_lookup)
        .payload_fields(LOOKUP_FIELDS)
        .on(accounts, _field("account_id"), "account", AccessType.READ)
    )
    (
        ledger.using_stream("adjustments")
        .apply(adjustment)
        .payload_fields(ADJUSTMENT_FIELDS, DETAIL_FIELDS)
        .on(accounts, _field("account_id"), "account", AccessType.READ_WRITE)
    )
    for view in VIEWS:
        ledger.declare_view(view, (VIEWS_DIR / f"{view}.sql").read_text(encoding="utf-8"))
    _declare_rules(ledger)
    ledger.declare_sample_events(sample_events)
    ledger.check()
    return ledger

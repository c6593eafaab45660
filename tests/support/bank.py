"""Building the bank's events (`ledger_engine.apps.bank.ledger`) for the tests.

Each builder returns an `Event` whose payload holds the stream's declared fields, in the order
the bank's docstring lists them, then any extra ones: a test names the accounts, the amount
and whatever else matters to it, and the rest takes a plain default (the asset entry
`asset-<account>`, one unit of it). To write events to a file or a line, see
`tests.support.events`.

The arguments are not checked: an amount may be `-5`, `"100"` or `2**70`, an id `None` or a
list, and `**extra` adds fields the stream does not declare, so that a test can send what a
client may send and see it rejected.
"""

from __future__ import annotations

from typing import Any

from ledger_engine.core.records import Event


class _Omitted:
    """The default of an optional payload field: left out of the payload (unlike `None`,
    which is sent as JSON null)."""

    def __repr__(self) -> str:
        return "<omitted>"


_OMITTED: Any = _Omitted()


def _asset_of(account: Any) -> str:
    """The asset entry the builders give `account` unless told otherwise: `asset-<account>`."""
    return f"asset-{account}"


def deposit(
    request_id: Any,
    account: Any,
    amount: Any,
    *,
    asset: Any = None,
    asset_amount: Any = 1,
    **extra: Any,
) -> Event:
    """A `deposits` event crediting `amount` to `account` and `asset_amount` to its asset
    entry `asset` (default `asset-<account>`); `extra` adds payload fields after those four."""
    payload = {
        "account_id": account,
        "asset_id": _asset_of(account) if asset is None else asset,
        "amount": amount,
        "asset_amount": asset_amount,
        **extra,
    }
    return Event("deposits", request_id, payload)


def transfer(
    request_id: Any,
    source: Any,
    target: Any,
    amount: Any,
    *,
    assets: tuple[Any, Any] | None = None,
    asset_amount: Any = 1,
    min_balance: Any = _OMITTED,
    **extra: Any,
) -> Event:
    """A `transfers` event moving `amount` from account `source` to account `target`, and
    `asset_amount` between the asset entries `assets` (source's, target's; default
    `asset-<source>` and `asset-<target>`).

    `min_balance` is in the payload only when given (`None` is sent as null); `extra` adds
    payload fields after the others."""
    payload = _move(source, target, amount, assets, asset_amount)
    if min_balance is not _OMITTED:
        payload["min_balance"] = min_balance
    return Event("transfers", request_id, payload | extra)


def fee_transfer(
    request_id: Any,
    source: Any,
    target: Any,
    amount: Any,
    *,
    fee: Any,
    fee_account: Any,
    assets: tuple[Any, Any] | None = None,
    asset_amount: Any = 1,
    min_balance: Any = _OMITTED,
    **extra: Any,
) -> Event:
    """A `fee_transfers` event: the transfer `transfer` builds from the same arguments, whose
    source also pays `fee` into account `fee_account` (the payload's `fee` and
    `fee_account_id`, after the transfer's fields and before `extra`)."""
    moved = transfer(
        request_id,
        source,
        target,
        amount,
        assets=assets,
        asset_amount=asset_amount,
        min_balance=min_balance,
    )
    payload = moved.payload | {"fee": fee, "fee_account_id": fee_account}
    return Event("fee_transfers", request_id, payload | extra)


def adjustment(request_id: Any, account: Any, amount: Any, **extra: Any) -> Event:
    """An `adjustments` event changing `account` by the signed `amount` (what a write-off of
    a reconciliation break posts); `extra` adds payload fields after those two."""
    return Event("adjustments", request_id, {"account_id": account, "amount": amount, **extra})


def lookup(request_id: Any, account: Any) -> Event:
    """A `balance_lookups` event asking for the balance of `account`."""
    return Event("balance_lookups", request_id, {"account_id": account})


def _move(
    source: Any,
    target: Any,
    amount: Any,
    assets: tuple[Any, Any] | None,
    asset_amount: Any,
) -> dict[str, Any]:
    """The payload fields a transfer and a fee transfer share."""
    source_asset, target_asset = (
        (_asset_of(source), _asset_of(target)) if assets is None else assets
    )
    return {
        "source_account_id": source,
        "target_account_id": target,
        "source_asset_id": source_asset,
        "target_asset_id": target_asset,
        "amount": amount,
        "asset_amount": asset_amount,
    }

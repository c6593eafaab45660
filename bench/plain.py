"""The floor: a plain Python loop applying the same events to two dicts, no engine.

It applies the bank application's rule (`ledger_engine/apps/bank/ledger.py`) and nothing else: no
admission (request ids, payload fields), no row buffers, no access checks, no change log, no
int64 range checks. A deposit credits its account and asset entry; a transfer whose amounts
are not positive integers (or whose fee is not a non-negative integer) is dropped, as the app
aborts it; otherwise it moves the money if the source balance exceeds `min_balance` (default 0)
and `amount + fee` and the source asset exceeds `asset_amount`, and emits the app's result
payload either way. What the serial runner costs beyond this loop is the engine's own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ledger_engine.apps.bank.ledger import REJECT, SUCCESS
from ledger_engine.core.records import Event


@dataclass
class PlainRun:
    """The loop's final state and the result payloads it emitted, in order."""

    accounts: dict[str, int]
    asset_ledger: dict[str, int]
    results: list[dict[str, Any]] = field(default_factory=list)


def run_plain(events: Iterable[Event], state: Mapping[str, Mapping[str, int]]) -> PlainRun:
    """Apply `events` (deposits, transfers, fee transfers) in order to a copy of `state`."""
    # Copied here, as run_serial copies its starting state: the caller times both alike.
    run = PlainRun(dict(state["accounts"]), dict(state["asset_ledger"]))
    for event in events:
        if event.stream == "deposits":
            _deposit(event.payload, run)
            continue
        result = _move(event.payload, event.stream == "fee_transfers", run)
        if result is not None:
            run.results.append(result)
    return run


def _positive(value: Any) -> bool:
    # `type(...) is int` and not isinstance: the app refuses booleans as amounts.
    return type(value) is int and value > 0


def _deposit(payload: dict[str, Any], run: PlainRun) -> None:
    amount, asset_amount = payload["amount"], payload["asset_amount"]
    if not (_positive(amount) and _positive(asset_amount)):
        return
    account, asset = payload["account_id"], payload["asset_id"]
    run.accounts[account] = run.accounts.get(account, 0) + amount
    run.asset_ledger[asset] = run.asset_ledger.get(asset, 0) + asset_amount


def _move(payload: dict[str, Any], pays_fee: bool, run: PlainRun) -> dict[str, Any] | None:
    """One transfer; its result payload, or None when the app would abort it."""
    amount, asset_amount = payload["amount"], payload["asset_amount"]
    min_balance = payload.get("min_balance", 0)
    fee = payload["fee"] if pays_fee else 0
    if not (_positive(amount) and _positive(asset_amount)) or type(min_balance) is not int:
        return None
    if type(fee) is not int or fee < 0:
        return None
    accounts, assets = run.accounts, run.asset_ledger
    source, target = payload["source_account_id"], payload["target_account_id"]
    source_asset = payload["source_asset_id"]
    balance = accounts.get(source, 0)
    asset_value = assets.get(source_asset, 0)
    status = REJECT
    if balance > min_balance and balance > amount + fee and asset_value > asset_amount:
        # In the app's order, each read after the writes before it: a self-transfer nets to
        # the fee, as the engine's one shared buffer per row makes it.
        accounts[source] = balance - amount - fee
        accounts[target] = accounts.get(target, 0) + amount
        assets[source_asset] = asset_value - asset_amount
        target_asset = payload["target_asset_id"]
        assets[target_asset] = assets.get(target_asset, 0) + asset_amount
        if pays_fee:
            fee_account = payload["fee_account_id"]
            accounts[fee_account] = accounts.get(fee_account, 0) + fee
        status = SUCCESS
    return {
        "status": status,
        "source_account_id": source,
        "target_account_id": target,
        "source_balance": accounts.get(source, 0),
        "target_balance": accounts.get(target, 0),
    }

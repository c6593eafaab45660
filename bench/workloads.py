"""The benchmark's workloads: bank transfers over a million accounts, generated with NumPy.

- `uniform`: source and target accounts uniform over all accounts;
- `zipf`: sources Zipf-skewed (theta 0.99: a few accounts send most transfers), targets
  uniform;
- `fee`: uniform, and every transfer also pays a fee into one fee account (`fee_transfers`).

Two more show what the runner does when a batch forms one giant conflict component (run them
with `--workloads hot,dense`):

- `hot`: every transfer pays into one account, which it reads (to report its balance) and
  writes: every transaction of the batch is tied to every other;
- `dense`: uniform over only `DENSE_ACCOUNTS` accounts, so that any batch of more than a few
  hundred transfers is one component, and rounds small enough to cut it cost more than they save.

One more measures the engine's ADD path (run it with `--workloads zipf_add`):

- `zipf_add`: deposits (stream `deposits`: each credits one account and its asset entry, an ADD
  that never reads the row) whose account is Zipf-skewed (theta 0.99, as `zipf`'s sources), so
  that a few rows take most of the adds. A deposit is a `Transfer` without a source
  (`Transfer.is_deposit`); every approach applies it as its two credits.

Every account starts with `OPENING_BALANCE` and its asset entry with `OPENING_ASSETS`, enough
that transfers rarely bounce, so that every approach does the same work: four row updates per
transfer (five with the fee), two per deposit.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ledger_engine.apps.bank.generator import account_id, asset_id
from ledger_engine.core.records import Event

WORKLOADS = ("uniform", "zipf", "fee")
GIANT_COMPONENT = ("hot", "dense")
ADD_PATH = ("zipf_add",)
DENSE_ACCOUNTS = 1_000
FEE_ACCOUNT = "acct-fees"
OPENING_BALANCE = 1_000_000_000
OPENING_ASSETS = 10_000_000
ZIPF_THETA = 0.99


@dataclass(frozen=True)
class Transfer:
    """One transfer as plain values (what each approach turns into its own input).

    `source` None makes it a deposit: `amount` and `asset_amount` credited to account `target`
    and its asset entry, nothing debited (then `fee` is None too).
    """

    request_id: str
    source: int | None
    target: int
    amount: int
    asset_amount: int
    fee: int | None

    @property
    def is_deposit(self) -> bool:
        """Whether this is a deposit (no source account), not a transfer."""
        return self.source is None

    def event(self) -> Event:
        """The event the engine runs: a `deposits`, `transfers` or `fee_transfers` event."""
        if self.source is None:
            deposit = {
                "account_id": account_id(self.target),
                "asset_id": asset_id(self.target),
                "amount": self.amount,
                "asset_amount": self.asset_amount,
            }
            return Event("deposits", self.request_id, deposit)
        payload = {
            "source_account_id": account_id(self.source),
            "target_account_id": account_id(self.target),
            "source_asset_id": asset_id(self.source),
            "target_asset_id": asset_id(self.target),
            "amount": self.amount,
            "asset_amount": self.asset_amount,
        }
        if self.fee is None:
            return Event("transfers", self.request_id, payload)
        payload["fee"] = self.fee
        payload["fee_account_id"] = FEE_ACCOUNT
        return Event("fee_transfers", self.request_id, payload)


def transfers(workload: str, count: int, accounts: int, seed: int = 1) -> list[Transfer]:
    """`count` transfers of `workload` over `accounts` accounts (deterministic)."""
    assert workload in WORKLOADS + GIANT_COMPONENT + ADD_PATH, workload
    rng = np.random.default_rng(seed)
    if workload == "zipf_add":
        return _deposits(rng, workload, count, accounts, seed)
    if workload == "dense":
        accounts = min(accounts, DENSE_ACCOUNTS)
    if workload == "zipf":
        sources = _zipf(rng, count, accounts)
    elif workload == "hot":
        sources = rng.integers(1, accounts, size=count)  # never the hot account itself
    else:
        sources = rng.integers(0, accounts, size=count)
    targets = np.zeros(count, np.int64) if workload == "hot" else rng.integers(0, accounts, count)
    amounts = rng.integers(1, 10_000, size=count)
    asset_amounts = rng.integers(1, 10, size=count)
    fees = rng.integers(1, 100, size=count) if workload == "fee" else None
    return [
        Transfer(
            f"{workload}-{seed}-{i}",
            int(sources[i]),
            int(targets[i]),
            int(amounts[i]),
            int(asset_amounts[i]),
            None if fees is None else int(fees[i]),
        )
        for i in range(count)
    ]


def _zipf(rng: np.random.Generator, count: int, accounts: int) -> np.ndarray:
    """`count` account indexes, Zipf-skewed with `ZIPF_THETA` (index 0 the most frequent)."""
    weights = 1.0 / np.arange(1, accounts + 1) ** ZIPF_THETA
    return rng.choice(accounts, size=count, p=weights / weights.sum())


def _deposits(
    rng: np.random.Generator, workload: str, count: int, accounts: int, seed: int
) -> list[Transfer]:
    """`count` deposits into Zipf-skewed accounts (`zipf_add`)."""
    targets = _zipf(rng, count, accounts)
    amounts = rng.integers(1, 10_000, size=count)
    asset_amounts = rng.integers(1, 10, size=count)
    return [
        Transfer(
            f"{workload}-{seed}-{i}",
            None,
            int(targets[i]),
            int(amounts[i]),
            int(asset_amounts[i]),
            None,
        )
        for i in range(count)
    ]


def opening_state(accounts: int) -> dict[str, dict[str, int]]:
    """The state every approach starts from."""
    return {
        "accounts": {account_id(i): OPENING_BALANCE for i in range(accounts)},
        "asset_ledger": {asset_id(i): OPENING_ASSETS for i in range(accounts)},
    }


def opening_deposits(accounts: int) -> Iterator[Event]:
    """Deposits that build `opening_state` through the pipeline."""
    for i in range(accounts):
        payload = {
            "account_id": account_id(i),
            "asset_id": asset_id(i),
            "amount": OPENING_BALANCE,
            "asset_amount": OPENING_ASSETS,
        }
        yield Event("deposits", f"open-{i}", payload)

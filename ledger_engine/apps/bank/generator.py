"""Seeded, realistic sample events for the bank application (`ledger_engine.apps.bank.ledger`).

`generate_events` builds a workload in memory: one opening deposit per account, then a mix of
transfers (about 80%), balance lookups (about 10%) and further deposits (about 10%). A share of
the events is faulty the way real feeds are (a negative, zero, fractional or textual amount, a
missing field, a null account id, a missing request id, a stream name nobody declared), and a
share are client retries that reuse an earlier request id, mostly with the same payload and
sometimes with another one.

`ledger_engine.pipeline.event_inbox.write_event_files` lands them as files, for this ledger or any.

Ids look like ``acct-000042`` / ``asset-000042`` (account *i* owns asset entry *i*) and request
ids like ``req-<seed>-<n>``. The same arguments always give the same events.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from ledger_engine.core.records import Event

DEPOSITS = "deposits"
TRANSFERS = "transfers"
BALANCE_LOOKUPS = "balance_lookups"

# Streams a misconfigured client might send to; none of them is declared by the bank ledger.
UNKNOWN_STREAMS = ("withdrawals", "transfer", "Transfers", "refunds")

# Share of a retry whose payload differs from the first attempt (a clash, not a retry).
_DIFFERENT_PAYLOAD_SHARE = 0.2
# Retries reuse a request id from this many most recent events.
_RETRY_WINDOW = 200


def account_id(index: int) -> str:
    """The id of account number `index`, e.g. ``acct-000042``."""
    return f"acct-{index:06d}"


def asset_id(index: int) -> str:
    """The id of the asset entry of account number `index`, e.g. ``asset-000042``."""
    return f"asset-{index:06d}"


def generate_events(
    count: int,
    *,
    accounts: int = 1000,
    seed: int = 0,
    bad_fraction: float = 0.01,
    duplicate_fraction: float = 0.01,
    references: bool = False,
) -> list[Event]:
    """Exactly `count` bank events, deterministic for a given `seed`.

    The first `min(count, accounts)` events are opening deposits, one per account in order.
    The rest are transfers, balance lookups and deposits between random accounts (a source may
    equal its target). `round(bad_fraction * count)` events are faulty, each with a fresh
    request id, so the bank ledger rejects exactly those; `round(duplicate_fraction * count)`
    reuse the request id of one of the 200 events before them (a retry, or in one case of five
    a changed payload). Both kinds are placed at random positions after the opening deposits,
    so there are fewer (none when `count <= accounts`) if those positions run out. With
    `references`, every deposit and transfer carries the payment's external reference
    (`E2E-<its request id>`), as a bank's clients send it and reconciliation matches by; the
    events are otherwise the same.

    Raises `ValueError` for a negative `count`, `accounts < 1`, or fractions outside [0, 1]
    or summing to more than 1.
    """
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    if accounts < 1:
        raise ValueError(f"accounts must be >= 1, got {accounts}")
    for name, fraction in (
        ("bad_fraction", bad_fraction),
        ("duplicate_fraction", duplicate_fraction),
    ):
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"{name} must be between 0 and 1, got {fraction}")
    if bad_fraction + duplicate_fraction > 1.0:
        raise ValueError("bad_fraction + duplicate_fraction must not exceed 1")

    rng = random.Random(seed)
    opening = min(count, accounts)
    rest = count - opening
    duplicates = min(rest, round(duplicate_fraction * count))
    bad = min(rest - duplicates, round(bad_fraction * count))
    special = rng.sample(range(opening, count), duplicates + bad)
    duplicate_positions = set(special[:duplicates])
    bad_positions = set(special[duplicates:])

    def fresh_id(position: int) -> str:
        return f"req-{seed}-{position}"

    events: list[Event] = []
    for index in range(opening):
        events.append(Event(DEPOSITS, fresh_id(index), _deposit(rng, index, opening=True)))
    for position in range(opening, count):
        if position in duplicate_positions:
            events.append(_retry(rng, events))
        elif position in bad_positions:
            good = _normal_event(rng, accounts, fresh_id(position))
            events.append(_spoil(rng, good))
        else:
            events.append(_normal_event(rng, accounts, fresh_id(position)))
    assert len(events) == count
    return [_with_reference(e) for e in events] if references else events


def _with_reference(event: Event) -> Event:
    """`event` with its external reference, where its stream moves money and it has an id."""
    if event.stream not in (DEPOSITS, TRANSFERS) or not isinstance(event.payload, dict):
        return event
    if not isinstance(event.request_id, str):
        return event
    return Event(
        event.stream, event.request_id, {**event.payload, "reference": f"E2E-{event.request_id}"}
    )


def sample_events(count: int, *, rows: int, seed: int) -> list[Event]:
    """The bank's declared sample (`StreamingLedger.declare_sample_events`): `count` events
    over `rows` accounts, with the default shares of faulty events and retries, each movement
    carrying its external reference."""
    return generate_events(count, accounts=rows, seed=seed, references=True)


def _deposit(rng: random.Random, index: int, *, opening: bool = False) -> dict[str, Any]:
    if opening:
        amount, asset_amount = rng.randint(50_000, 5_000_000), rng.randint(1_000, 100_000)
    else:
        amount, asset_amount = rng.randint(100, 500_000), rng.randint(10, 10_000)
    return {
        "account_id": account_id(index),
        "asset_id": asset_id(index),
        "amount": amount,
        "asset_amount": asset_amount,
    }


def _transfer(rng: random.Random, accounts: int) -> dict[str, Any]:
    source = rng.randrange(accounts)
    target = rng.randrange(accounts)
    return {
        "source_account_id": account_id(source),
        "target_account_id": account_id(target),
        "source_asset_id": asset_id(source),
        "target_asset_id": asset_id(target),
        "amount": rng.choice((rng.randint(1, 10_000), rng.randint(1, 250_000))),
        "asset_amount": rng.randint(1, 5_000),
        "min_balance": rng.choice((0, 0, 0, 0, 0, 0, 1_000, 10_000)),
    }


def _normal_event(rng: random.Random, accounts: int, request_id: str) -> Event:
    draw = rng.random()
    if draw < 0.8:
        return Event(TRANSFERS, request_id, _transfer(rng, accounts))
    if draw < 0.9:
        return Event(
            BALANCE_LOOKUPS, request_id, {"account_id": account_id(rng.randrange(accounts))}
        )
    return Event(DEPOSITS, request_id, _deposit(rng, rng.randrange(accounts)))


def _amount_field(rng: random.Random) -> str:
    return rng.choice(("amount", "asset_amount"))


def _negative(rng: random.Random, event: Event) -> Event:
    payload = dict(event.payload)
    field = _amount_field(rng)
    payload[field] = -payload[field]
    return Event(event.stream, event.request_id, payload)


def _zero(rng: random.Random, event: Event) -> Event:
    payload = dict(event.payload)
    payload[_amount_field(rng)] = 0
    return Event(event.stream, event.request_id, payload)


def _fractional(rng: random.Random, event: Event) -> Event:
    payload = dict(event.payload)
    field = _amount_field(rng)
    payload[field] = payload[field] + 0.5  # e.g. 12.50 sent in major units
    return Event(event.stream, event.request_id, payload)


def _textual(rng: random.Random, event: Event) -> Event:
    payload = dict(event.payload)
    field = _amount_field(rng)
    payload[field] = str(payload[field])
    return Event(event.stream, event.request_id, payload)


def _missing_field(rng: random.Random, event: Event) -> Event:
    payload = dict(event.payload)
    required = sorted(k for k in payload if k != "min_balance")  # min_balance has a default
    del payload[rng.choice(required)]
    return Event(event.stream, event.request_id, payload)


def _null_account(rng: random.Random, event: Event) -> Event:
    payload = dict(event.payload)
    payload[rng.choice(sorted(k for k in payload if k.endswith("account_id")))] = None
    return Event(event.stream, event.request_id, payload)


def _missing_request_id(rng: random.Random, event: Event) -> Event:
    return Event(event.stream, None, dict(event.payload))


def _unknown_stream(rng: random.Random, event: Event) -> Event:
    return Event(rng.choice(UNKNOWN_STREAMS), event.request_id, dict(event.payload))


Fault = Callable[[random.Random, Event], Event]

# Faults that fit any event, and those that need an amount (not balance lookups); with weights.
_ANY_FAULTS: tuple[tuple[Fault, int], ...] = (
    (_missing_field, 3),
    (_null_account, 1),
    (_missing_request_id, 1),
    (_unknown_stream, 2),
)
_AMOUNT_FAULTS: tuple[tuple[Fault, int], ...] = (
    (_negative, 3),
    (_zero, 1),
    (_fractional, 3),
    (_textual, 1),
)


def _spoil(rng: random.Random, event: Event) -> Event:
    """`event` made faulty in one realistic way; the bank ledger rejects every such event."""
    choices = _ANY_FAULTS if event.stream == BALANCE_LOOKUPS else _ANY_FAULTS + _AMOUNT_FAULTS
    faults, weights = zip(*choices, strict=True)
    fault = rng.choices(faults, weights=weights)[0]
    return fault(rng, event)


def _retry(rng: random.Random, events: list[Event]) -> Event:
    """A client retry of a recent event: same request id, usually the same payload."""
    recent = [e for e in events[-_RETRY_WINDOW:] if isinstance(e.request_id, str)] or [
        e for e in events if isinstance(e.request_id, str)
    ]
    first = rng.choice(recent)
    if rng.random() >= _DIFFERENT_PAYLOAD_SHARE or not isinstance(first.payload, dict):
        return Event(first.stream, first.request_id, first.payload)
    payload = dict(first.payload)
    amount = payload.get("amount")
    if isinstance(amount, int) and not isinstance(amount, bool):
        payload["amount"] = amount + rng.randint(1, 1_000)
    else:
        payload["note"] = "retry with an edited payload"
    return Event(first.stream, first.request_id, payload)

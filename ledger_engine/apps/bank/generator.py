"""Seeded, realistic sample events for the bank application (`ledger_engine.apps.bank.ledger`).

`generate_events` builds a workload in memory: one opening deposit per account, then a mix of
transfers (about 80%), balance lookups (about 10%) and further deposits (about 10%). A share of
the events is faulty the way real feeds are (a negative, zero, fractional or textual amount, a
missing field, a null account id, a missing request id, a stream name nobody declared), and a
share are client retries that reuse an earlier request id, mostly with the same payload and
sometimes with another one.

`write_event_files` lands the events as JSON-lines files in an inbox folder, one envelope
`{"stream", "request_id", "payload"}` per line (see `event_to_line`). Each file appears
atomically, so a streaming reader never sees half of one, and lands a millisecond or more after
the one before it: Spark's file source takes files in the order of their modification times, in
milliseconds, and orders files of the same millisecond as the directory lists them.

Ids look like ``acct-000042`` / ``asset-000042`` (account *i* owns asset entry *i*) and request
ids like ``req-<seed>-<n>``. The same arguments always give the same events.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ledger_engine.core.ingest import event_to_line
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
) -> list[Event]:
    """Exactly `count` bank events, deterministic for a given `seed`.

    The first `min(count, accounts)` events are opening deposits, one per account in order.
    The rest are transfers, balance lookups and deposits between random accounts (a source may
    equal its target). `round(bad_fraction * count)` events are faulty, each with a fresh
    request id, so the bank ledger rejects exactly those; `round(duplicate_fraction * count)`
    reuse the request id of one of the 200 events before them (a retry, or in one case of five
    a changed payload). Both kinds are placed at random positions after the opening deposits,
    so there are fewer (none when `count <= accounts`) if those positions run out.

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
    return events


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


def write_event_files(
    events: Iterable[Event],
    inbox: Path,
    *,
    events_per_file: int = 1000,
    prefix: str = "events",
) -> list[Path]:
    """Write `events` as JSON-lines files ``<prefix>-<index:06d>.jsonl`` into `inbox`.

    Files hold `events_per_file` events each (the last may hold fewer), in event order. Each
    file is written under a hidden temporary name and renamed into place, so a reader listing
    ``*.jsonl`` only ever sees complete files, and its modification time, in milliseconds, is
    later than the file's before it, so a streaming reader takes them in this order. Returns
    the paths in order.
    """
    if events_per_file < 1:
        raise ValueError(f"events_per_file must be >= 1, got {events_per_file}")
    inbox = Path(inbox)
    inbox.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    chunk: list[str] = []

    landed_ms = -1

    def flush() -> None:
        nonlocal landed_ms
        path = inbox / f"{prefix}-{len(paths):06d}.jsonl"
        _write_atomically(path, "".join(chunk))
        landed_ms = _land_after(path, landed_ms)
        paths.append(path)
        chunk.clear()

    for event in events:
        chunk.append(event_to_line(event) + "\n")
        if len(chunk) == events_per_file:
            flush()
    if chunk:
        flush()
    return paths


def _land_after(path: Path, previous_ms: int) -> int:
    """Move `path`'s modification time past `previous_ms` if it is not already; return it, in
    milliseconds (the resolution Spark's file source reads and orders by)."""
    landed_ms = os.stat(path).st_mtime_ns // 1_000_000
    if landed_ms <= previous_ms:
        landed_ms = previous_ms + 1
        os.utime(path, ns=(landed_ms * 1_000_000, landed_ms * 1_000_000))
    return landed_ms


def _write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        with open(temporary, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise

"""Bad input loses nothing: each bad line is rejected with its reason, a telling detail and its
raw bytes kept; the rest of the batch goes on; ingested = applied + rejected + duplicate.

The in-process sections pin down how single lines and events are judged; the last section
sends one batch holding every kind of bad line, an empty file and a file cut mid-write through
Spark and PostgreSQL, and compares every stored line with the serial reference.
"""

from __future__ import annotations

import pytest

from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.core.admission import INVALID_REQUEST_ID, screen
from ledger_engine.core.declarations import AccessType, StreamingLedger
from ledger_engine.core.ingest import CUT_SHORT, TOO_DEEP, ingest_files, nonblank_lines, parse_line
from ledger_engine.core.records import Event
from ledger_engine.core.storable import MAX_NESTING
from ledger_engine.runtime.serial import run_serial
from tests.support.bank import deposit, lookup, transfer
from tests.support.batch_oracle import (
    expected_batch,
    stored_bank_state,
    stored_batch,
    stored_counts,
    stored_results,
)
from tests.support.events import envelope, envelope_line, event_line, nested

LEDGER = build_ledger()


# Account `acct-x` holds the asset entry `asset-x`; a transfer from a to b moves assets between:
ASSETS_AB = ("asset-a", "asset-b")
GOOD_DEPOSIT = event_line(deposit("ok", "acct-a", 100, asset="asset-a", asset_amount=10))


# -- lines that hold no event ------------------------------------------------------------------


def test_every_cut_of_a_line_is_reported_as_cut_short():
    memo = 'quote " and \\ and \u00e9'
    raw = event_line(transfer("r-é€😀", "acct-a", "acct-b", 5, assets=ASSETS_AB, memo=memo))
    for end in range(1, len(raw)):
        assert parse_line(raw[:end]) == CUT_SHORT, raw[:end]


def test_a_complete_last_line_needs_no_newline():
    lines = ingest_files([("f.jsonl", GOOD_DEPOSIT + b"\n" + GOOD_DEPOSIT.replace(b"ok", b"k2"))])
    assert [x.problem for x in lines] == [None, None]


def test_a_line_cut_in_the_middle_of_a_file_is_cut_short_and_the_next_lines_go_on():
    content = GOOD_DEPOSIT[:30] + b"\n" + GOOD_DEPOSIT + b"\n"
    lines = ingest_files([("f.jsonl", content)])
    assert [(x.line_number, x.raw, x.problem) for x in lines] == [
        (1, GOOD_DEPOSIT[:30], CUT_SHORT),
        (2, GOOD_DEPOSIT, None),
    ]


def test_a_line_of_broken_syntax_in_the_middle_of_a_file_is_not_valid_json_not_cut_short():
    content = GOOD_DEPOSIT + b"\n{not json\n" + GOOD_DEPOSIT.replace(b"ok", b"k2") + b"\n"
    lines = ingest_files([("f.jsonl", content)])
    assert [(x.line_number, x.problem) for x in lines] == [
        (1, None),
        (
            2,
            "line is not valid JSON (Expecting property name enclosed in double quotes:"
            " line 1 column 2 (char 1))",
        ),
        (3, None),
    ]


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": tr',  # a literal begun
        b'{"a": -',  # a number begun
        b'{"a": 1.',
        b'{"a": 1e+',
        b'{"a": "x\\',  # an escape begun
        b'{"a": "\\u00',
        b'{"a":',
        b'{"a"',
        b'{"a',
        b"[1, 2,",
        b'[{"a": [true, null, {"b": "c"}], "d": ',
        b' \t{"a": 1, ',
    ],
)
def test_a_line_that_stops_where_json_could_go_on_is_cut_short(raw):
    assert parse_line(raw) == CUT_SHORT


@pytest.mark.parametrize(
    ("raw", "detail"),
    [
        (b"{not json", "not valid JSON (Expecting property name enclosed in double quotes"),
        (b'{"a": trux', "not valid JSON (Expecting value"),
        (b'{"a" 1', "not valid JSON (Expecting ':' delimiter"),
        (b'{"a": 01', "not valid JSON (Expecting ',' delimiter"),
        (b'{"a": 1.e', "not valid JSON (Expecting ',' delimiter"),
        (b'{"a": "x\ty', "not valid JSON (Invalid control character"),
        (b'{"a": "\\x', "not valid JSON (Invalid \\escape"),
        (b'{"a": [1, 2}', "not valid JSON (Expecting ',' delimiter"),
        (b'{"a": NaN', "not valid JSON (NaN is not a JSON number)"),
        (b'{"a": 1,,', "not valid JSON (Expecting property name"),
        (b"{not json \xc3", "not valid UTF-8 (unexpected end of data at byte 10)"),
    ],
)
def test_a_line_broken_before_its_end_is_not_cut_short(raw, detail):
    # It is the syntax: no more bytes would make it JSON.
    problem = parse_line(raw)
    assert isinstance(problem, str) and problem.startswith(f"line is {detail}")


@pytest.mark.parametrize(
    ("raw", "detail"),
    [
        (b'{"stream":"deposits"} trailing', "not valid JSON (Extra data"),
        (b'{"a":1}}', "not valid JSON (Extra data"),
        (b'{"a":[1}', "not valid JSON"),
        (b"[1, 2", CUT_SHORT),
        (b'{"a":"caf\xc3', CUT_SHORT),  # ends inside a two-byte character
        (b'{"a":"caf\xe9"}', "not valid UTF-8 (invalid continuation byte at byte 9)"),
        (b"\xff\xfe{\x00}\x00", "not valid UTF-8 (invalid start byte at byte 0)"),
        (b'{"a": NaN}', "not valid JSON (NaN is not a JSON number)"),
        (b'{"a": -Infinity}', "not valid JSON (-Infinity is not a JSON number)"),
        (b'{"a": ' + b"7" * 5000 + b"}", "not valid JSON (Exceeds the limit (4300 digits)"),
        (b"\x0c", "not valid JSON (Expecting value"),  # form feed is not JSON whitespace
        (b"null", "line must hold a JSON object, not null"),
        (b"[]", "line must hold a JSON object, not array"),
        (b'"text"', "line must hold a JSON object, not string"),
        (b'{"stream":"a","stream":"b"}', "line repeats the key 'stream' within one object"),
        (b'{"payload":{"x":1,"x":1}}', "line repeats the key 'x' within one object"),
        (b'{"stream":"deposits","request_id":"r"}', "envelope lacks field 'payload'"),
        (b"{}", "envelope lacks fields 'payload', 'request_id', 'stream'"),
        (
            b'{"stream":"s","request_id":"r","payload":{},"ts":1}',
            "envelope has unknown field 'ts'",
        ),
        (b"[" * 5000 + b"]" * 5000, TOO_DEEP),
    ],
)
def test_a_line_that_holds_no_event_says_why(raw, detail):
    problem = parse_line(raw)
    assert isinstance(problem, str)
    assert problem.startswith(detail) or detail in problem


def test_nesting_is_refused_beyond_the_limit_and_not_before():
    at_limit = event_line(Event("s", "r", {"v": nested(MAX_NESTING - 1)}))  # MAX_NESTING levels
    beyond = event_line(Event("s", "r", {"v": nested(MAX_NESTING)}))
    assert isinstance(parse_line(at_limit), Event)
    assert parse_line(beyond) == TOO_DEEP


def verdict_from_deep_in_the_stack(raw: bytes, frames: int) -> Event | str:
    """`parse_line(raw)` called `frames` calls deep, as in a Spark worker's deeper stack."""
    if frames == 0:
        return parse_line(raw)
    return verdict_from_deep_in_the_stack(raw, frames - 1)


@pytest.mark.parametrize(
    "raw, detail",
    [
        # Found by the ingest fuzz test: cut short after nesting far too deep.
        (b'{"stream":"deposits","request_id":"r1","payload":{"a":' + b"[" * 900, CUT_SHORT),
        (b'{"a":' + b"[" * 900 + b"]" * 899 + b"x}", TOO_DEEP),  # too deep, then not JSON
        (b'{"a":' + b"[" * 900 + b"]" * 900 + b"}", TOO_DEEP),
    ],
)
def test_a_deep_lines_verdict_does_not_depend_on_the_callers_stack(raw, detail):
    verdicts = {verdict_from_deep_in_the_stack(raw, frames) for frames in (0, 400, 800)}
    assert verdicts == {detail}


def test_a_byte_order_mark_and_a_crlf_ending_are_line_syntax_not_content():
    lines = ingest_files([("f.jsonl", b"\xef\xbb\xbf" + GOOD_DEPOSIT + b"\r\n")])
    assert lines[0].event == parse_line(GOOD_DEPOSIT)
    assert lines[0].raw == b"\xef\xbb\xbf" + GOOD_DEPOSIT


def test_only_lines_of_json_whitespace_are_blank():
    content = b"\n \t\r\n\r\n\x0b\n" + GOOD_DEPOSIT
    assert [number for number, _ in nonblank_lines(content)] == [4, 5]


# -- events judged before they run -------------------------------------------------------------


def bank_rejection(event: Event) -> tuple[str, str]:
    """The reason and detail of the bank's admission rejecting `event` (it must)."""
    rejection = screen(LEDGER.streams, event).rejection
    assert rejection is not None
    return rejection.reason, rejection.detail


def test_a_missing_declared_field_is_named():
    event = transfer("r1", "acct-a", "acct-b", 5, assets=ASSETS_AB)
    del event.payload["asset_amount"]
    assert bank_rejection(event) == (
        "invalid_event",
        "payload lacks field 'asset_amount' (fields it takes: amount, asset_amount, "
        "description, min_balance, reference, source_account_id, source_asset_id, "
        "target_account_id, target_asset_id, value_date)",
    )


def test_a_misspelt_field_is_named_as_missing_and_unknown():
    event = transfer("r1", "acct-a", "acct-b", 5, assets=ASSETS_AB)
    event.payload["ammount"] = event.payload.pop("amount")
    reason, detail = bank_rejection(event)
    assert reason == "invalid_event"
    assert detail.startswith("payload lacks field 'amount' and has unknown field 'ammount'")


def test_many_unknown_fields_are_listed_briefly():
    event = transfer("r1", "acct-a", "acct-b", 5, assets=ASSETS_AB)
    event.payload.update({f"extra_{i}_{'x' * 100}": i for i in range(9)})
    reason, detail = bank_rejection(event)
    assert reason == "invalid_event"
    assert "has unknown fields 'extra_0_xxxx" in detail and "and 4 more" in detail
    assert len(detail) < 600


def test_a_stream_that_declares_no_fields_takes_any():
    ledger = StreamingLedger.create("free")
    notes = ledger.declare_state("notes", value_type=dict)

    def keep(event: dict, ctx, note) -> None:
        note.write(event)

    ledger.using_stream("notes").apply(keep).on(notes, lambda e: e["id"], "note", AccessType.WRITE)
    payload = {"id": "n1", "anything": [1.5, {"deep": 10**40}], "else": None}
    result = run_serial(ledger, [Event("notes", "r1", payload)])
    assert result.state == {"notes": {"n1": payload}}


@pytest.mark.parametrize("rid", ["", 42, None, "r" * 1025, "é" * 513, "nul\x00", "\ud800"])
def test_an_unusable_request_id_is_refused(rid):
    event = transfer(rid, "acct-a", "acct-b", 5, assets=ASSETS_AB)
    assert bank_rejection(event) == ("invalid_event", INVALID_REQUEST_ID)


def test_a_request_id_of_1024_bytes_is_usable():
    event = transfer("é" * 512, "acct-a", "acct-b", 5, assets=ASSETS_AB)
    assert screen(LEDGER.streams, event).rejection is None


def test_a_key_too_long_to_index_is_a_type_error():
    long_id = "a" * 1100
    event = transfer("r1", f"acct-{long_id}", "acct-b", 5, assets=(f"asset-{long_id}", "asset-b"))
    reason, detail = bank_rejection(event)
    assert (reason, detail) == ("type_error", "field 'source_account_id' is longer than 1024 bytes")


@pytest.mark.parametrize(
    ("stream", "detail"),
    [
        (None, "no stream given (stream is missing or null)"),
        (7, "stream must be a stream name, not number 7"),
        ("w" * 500, "unknown stream 'wwww"),
    ],
)
def test_an_unknown_stream_is_named_briefly(stream, detail):
    reason, found = bank_rejection(Event(stream, "r1", {}))
    assert reason == "invalid_event" and found.startswith(detail) and len(found) < 120


@pytest.mark.parametrize(
    ("payload", "detail"),
    [
        ({"v": nested(3_000)}, "payload nests arrays or objects deeper than 64 levels"),
        ({"v": 10**5000}, "payload.v is an integer of more than 4300 digits"),
    ],
)
def test_an_event_built_in_memory_that_cannot_be_encoded_is_rejected_not_crashed(payload, detail):
    events = [Event("transfers", "r1", payload), Event("transfers", "r1", payload)]
    first, again = run_serial(LEDGER, events), run_serial(LEDGER, events)
    assert [(r.reason, r.detail) for r in first.rejections] == [("invalid_event", detail)]
    assert [d.kind for d in first.duplicates] == ["exists"]
    assert first == again


# -- one batch of every kind of bad line through Spark and PostgreSQL ----------------------------

# (raw line, reason, what the detail says); one line each, in file order.
BAD_LINES: list[tuple[bytes, str, str]] = [
    (b'{"stream":"deposits","request_id":"j1" "payload":{}}', "invalid_event", "not valid JSON"),
    (
        b'{"stream":"deposits","request_id":"u1","payload":{"account_id":"caf\xe9"}}',
        "invalid_event",
        "not valid UTF-8",
    ),
    (b"null", "invalid_event", "must hold a JSON object, not null"),
    (b"[1,2]", "invalid_event", "must hold a JSON object, not array"),
    (b'{"stream":"deposits","request_id":"m1"}', "invalid_event", "lacks field 'payload'"),
    (
        envelope_line(
            {
                **envelope(deposit("x1", "acct-a", 100, asset="asset-a", asset_amount=10)),
                "sent_at": "2024-01-01",
            }
        ),
        "invalid_event",
        "envelope has unknown field 'sent_at'",
    ),
    (
        event_line(
            Event("deposits", "f1", {"account_id": "acct-a", "amount": 5, "asset_amount": 1})
        ),
        "invalid_event",
        "payload lacks field 'asset_id'",
    ),
    (
        event_line(transfer("f2", "acct-a", "acct-b", 5, assets=ASSETS_AB, ammount=7)),
        "invalid_event",
        "has unknown field 'ammount'",
    ),
    (
        event_line(deposit("t1", "acct-a", "100", asset="asset-a", asset_amount=10)),
        "aborted",
        "got '100'",
    ),
    (
        event_line(deposit("t2", "acct-a", 12.5, asset="asset-a", asset_amount=10)),
        "aborted",
        "got 12.5",
    ),
    (
        b'{"stream":"deposits","request_id":"t3","payload":{"account_id":"acct-a",'
        b'"asset_id":"asset-a","amount":1e2,"asset_amount":1}}',
        "aborted",
        "got 100.0",
    ),
    (
        event_line(deposit("t4", "acct-a", -5, asset="asset-a", asset_amount=10)),
        "aborted",
        "positive integer, got -5",
    ),
    (
        event_line(deposit("t5", "acct-a", 0, asset="asset-a", asset_amount=10)),
        "aborted",
        "positive integer, got 0",
    ),
    (
        event_line(deposit("o1", "acct-a", 2**63, asset="asset-a", asset_amount=10)),
        "overflow",
        "outside the int64 range",
    ),
    (
        # stored as a jsonb numeric
        event_line(deposit("o2", "acct-a", 10**4000, asset="asset-a", asset_amount=10)),
        "overflow",
        "outside the int64 range",
    ),
    (
        event_line(transfer("o3", "acct-a", "acct-b", 5, assets=ASSETS_AB, min_balance=10**30)),
        "overflow",
        "min_balance 1000000000000000000000000000000 is outside the int64 range",
    ),
    (
        b'{"stream":"deposits","request_id":"i1","payload":{"account_id":"acct-a",'
        b'"asset_id":"asset-a","amount":1e999,"asset_amount":1}}',
        "invalid_event",
        "payload.amount is inf, which JSON cannot hold",
    ),
    (
        b'{"stream":"deposits","request_id":"n1","payload":{"amount":NaN}}',
        "invalid_event",
        "NaN is not a JSON number",
    ),
    (
        b'{"stream":"deposits","request_id":"n2","payload":{"amount":' + b"9" * 4400 + b"}}",
        "invalid_event",
        "Exceeds the limit (4300 digits)",
    ),
    (event_line(Event("withdrawals", "s1", {})), "invalid_event", "unknown stream 'withdrawals'"),
    (event_line(Event(None, "s2", {})), "invalid_event", "no stream given"),
    (
        event_line(deposit("", "acct-a", 100, asset="asset-a", asset_amount=10)),
        "invalid_event",
        INVALID_REQUEST_ID,
    ),
    (
        event_line(deposit(42, "acct-a", 100, asset="asset-a", asset_amount=10)),
        "invalid_event",
        INVALID_REQUEST_ID,
    ),
    (
        event_line(deposit("r" * 2000, "acct-a", 100, asset="asset-a", asset_amount=10)),
        "invalid_event",
        INVALID_REQUEST_ID,
    ),
    (
        event_line(deposit("nul\x00", "acct-a", 100, asset="asset-a", asset_amount=10)),
        "invalid_event",
        INVALID_REQUEST_ID,
    ),
    (
        b'{"stream":"deposits","request_id":"\\ud800","payload":{}}',
        "invalid_event",
        INVALID_REQUEST_ID,
    ),
    (
        event_line(Event("deposits", "p1", [1, 2])),
        "invalid_event",
        "payload must be an object, not array",
    ),
    (
        event_line(deposit("p2", "nul\x00", 100, asset="asset-a", asset_amount=10)),
        "invalid_event",
        "payload.account_id contains a NUL",
    ),
    (
        event_line(deposit("p3", "acct-a", 100, asset=nested(MAX_NESTING - 1), asset_amount=10)),
        "type_error",  # nested to the limit: stored, and judged by the app
        "field 'asset_id' must be a str, got list",
    ),
    (
        event_line(deposit("p4", "acct-a", 100, asset=nested(MAX_NESTING), asset_amount=10)),
        "invalid_event",
        TOO_DEEP,
    ),
    (
        event_line(deposit("p5", "x" * 100_000, 100, asset="asset-a", asset_amount=10)),
        "type_error",  # a long line, kept whole
        "field 'account_id' is longer than 1024 bytes",
    ),
    (
        b'{"stream":"deposits","stream":"transfers","request_id":"k1","payload":{}}',
        "invalid_event",
        "repeats the key 'stream'",
    ),
    (
        b'{"stream":"deposits","request_id":"k2","payload":{"amount":1,"amount":2}}',
        "invalid_event",
        "repeats the key 'amount'",
    ),
    (b"\x0c", "invalid_event", "not valid JSON"),
    (GOOD_DEPOSIT + b"\r" + GOOD_DEPOSIT, "invalid_event", "not valid JSON (Extra data"),
    (b'{"stream":"deposits","request_id":"c1","payload":{"acc', "invalid_event", CUT_SHORT),
    (b"{not json", "invalid_event", "not valid JSON (Expecting property name"),
    (
        b'{"stream":"deposits","request_id":"c2","payload":{"account_id": nope',
        "invalid_event",
        "not valid JSON (Expecting value",
    ),
]

GOOD_LINES = [
    event_line(deposit("d1", "acct-a", 1_000, asset="asset-a", asset_amount=100)),
    # a CRLF ending
    event_line(deposit("d2", "acct-b", 500, asset="asset-b", asset_amount=10)) + b"\r",
    b"\xef\xbb\xbf" + event_line(deposit("d3", "acct-c", 10, asset="asset-c", asset_amount=10)),
    b" \t ",  # blank: skipped, not counted
    b"",
    event_line(transfer("t-ok", "acct-a", "acct-b", 200, assets=ASSETS_AB, min_balance=0)),
    event_line(lookup("l1", "acct-b")),
    # a retry: exists
    event_line(deposit("d1", "acct-a", 1_000, asset="asset-a", asset_amount=100)),
    # a clash: exists_with_different_payload
    event_line(deposit("d2", "acct-b", 999, asset="asset-b", asset_amount=10)),
    event_line(lookup("l2", "acct-a")),  # no newline after it
]

CUT_FILE_LINES = [
    event_line(deposit("e1", "acct-d", 70, asset="asset-d", asset_amount=10)),
    event_line(lookup("e2", "acct-d")),
]
CUT_LINE = event_line(transfer("e3", "acct-d", "acct-a", 20, assets=("asset-d", "asset-a")))[:57]


def batch_files() -> list[tuple[str, bytes]]:
    return [
        ("batch-1-good.jsonl", b"\n".join(GOOD_LINES)),
        ("batch-2-bad.jsonl", b"\n".join(raw for raw, _, _ in BAD_LINES) + b"\n"),
        ("batch-3-empty.jsonl", b""),
        ("batch-4-cut.jsonl", b"".join(x + b"\n" for x in CUT_FILE_LINES) + CUT_LINE),
    ]


def test_a_batch_of_every_kind_of_bad_line_loses_nothing(engine, commit_files):
    files = batch_files()
    expected = expected_batch(LEDGER, files)

    summary = commit_files(engine, 0, files)

    assert summary.committed
    # Every line: same outcome, reason, detail, duplicate kind and raw bytes as the reference.
    stored = stored_batch(engine, 0)
    assert stored == expected.lines
    by_line = {(x.source_file, x.line_number): x for x in stored}
    for number, (raw, reason, detail) in enumerate(BAD_LINES, start=1):
        kept = by_line["batch-2-bad.jsonl", number]
        assert (kept.outcome, kept.reason, kept.raw) == ("rejected", reason, raw)
        assert detail in kept.detail
    cut = by_line["batch-4-cut.jsonl", 3]
    assert (cut.outcome, cut.detail, cut.raw) == ("rejected", CUT_SHORT, CUT_LINE)
    assert [by_line["batch-4-cut.jsonl", n].outcome for n in (1, 2)] == ["applied", "applied"]
    good = [
        (x.line_number, x.outcome, x.kind) for x in stored if x.source_file.endswith("good.jsonl")
    ]
    assert good == [
        (1, "applied", None),
        (2, "applied", None),
        (3, "applied", None),
        (6, "applied", None),
        (7, "applied", None),
        (8, "duplicate", "exists"),
        (9, "duplicate", "exists_with_different_payload"),
        (10, "applied", None),
    ]
    # The valid events applied exactly as the serial runner computes.
    assert stored_bank_state(engine) == expected.result.state
    assert stored_results(engine) == [
        (r.stream, r.request_id, r.payload) for r in expected.result.results
    ]
    # The counts add up, in the batch report and in the batch's row.
    counts = (summary.ingested, summary.applied, summary.rejected, summary.duplicates)
    assert counts == stored_counts(engine, 0)
    assert summary.ingested == len(expected.lines) == 8 + len(BAD_LINES) + 3
    assert summary.ingested == summary.applied + summary.rejected + summary.duplicates
    assert summary.rejected == len(BAD_LINES) + 1

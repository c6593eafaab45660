"""What the workbench answers a request it cannot take (issue 46, point 16): a malformed filter
or id is a bad request (400), a blank note too, each said in the workbench's own words (never
a library's sentence), on a page that leads back; and it changes nothing."""

from __future__ import annotations

import html

import pytest

from tests.support.workbench import D3, R9, Workbench

LIBRARY_WORDS = ("Input should be", "unable to parse", "valid integer", "Field required")


def said(text: str) -> str:
    """The refusal a page shows (its alert, or a notice's paragraph)."""
    for start, end in (('role="alert">', "</p>"), ("</h1>\n<p>", "</p>")):
        if start in text:
            return html.unescape(text.split(start, 1)[1].split(end, 1)[0])
    raise AssertionError(f"no refusal shown in {text[:500]!r}")


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("reason=nope", "reason: one of"),
        ("reason=Duplicate", "reason: one of"),
        ("min_age_days=-1", "min_age_days: whole days from 0"),
        ("min_age_days=1.5", "min_age_days: whole days from 0"),
    ],
)
def test_a_malformed_filter_is_a_bad_request(bench: Workbench, query: str, words: str) -> None:
    answer = bench.get(f"/ledger/breaks?{query}")

    assert answer.status_code == 400
    assert words in said(answer.text)


def test_every_reason_the_queue_offers_is_a_filter_it_takes(bench: Workbench) -> None:
    for reason in ("duplicate", "amount_mismatch", "missing_in_ledger", "missing_in_statement"):
        assert bench.get(f"/ledger/breaks?reason={reason}").status_code == 200, reason


@pytest.mark.parametrize("path", ["/ledger/breaks/abc", "/ledger/breaks/1e3", "/ledger/breaks/-"])
def test_a_malformed_break_id_is_said_in_the_workbenchs_words(bench: Workbench, path: str) -> None:
    answer = bench.get(path)

    assert answer.status_code == 400
    shown = said(answer.text)
    assert "a break's id is a whole number" in shown
    assert not any(words in answer.text for words in LIBRARY_WORDS), shown


def test_a_malformed_break_id_in_a_form_is_said_in_the_workbenchs_words(bench: Workbench) -> None:
    before = bench.worked()
    answer = bench.post("/ledger/breaks/match", {"break_id": ["x"], "note": "n"})

    assert answer.status_code == 400
    assert "a break's id is a whole number" in said(answer.text)
    assert not any(words in answer.text for words in LIBRARY_WORDS)
    assert bench.worked() == before


@pytest.mark.parametrize("note", ["", "   ", "\n\t"])
def test_a_blank_note_is_a_bad_request_and_changes_nothing(bench: Workbench, note: str) -> None:
    r9, d3 = bench.breaks[R9], bench.breaks[D3]
    before = bench.worked()

    matched = bench.post("/ledger/breaks/match", {"break_id": [d3], "from_break": r9, "note": note})
    written_off = bench.post(f"/ledger/breaks/{r9}/write-off", {"note": note})

    assert (matched.status_code, written_off.status_code) == (400, 400)
    assert "say why, with a note" in said(matched.text)
    assert "say why, with a note" in said(written_off.text)
    assert bench.worked() == before
    assert bench.status(r9) == ("open", None)

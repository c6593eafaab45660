"""Working breaks never leaves a person stuck (issue 46, point 3): each action's page is at an
address that may be loaded again (Airflow's UI keeps the framed page's address in its own, and
loads it by GET when the user reloads), a success answers with a redirect to the page showing
its outcome (post/redirect/get), and a refused match or write-off comes back with what the
person ticked and typed."""

from __future__ import annotations

import pytest

from tests.support.workbench import (
    D3,
    MISMATCH,
    R8,
    R9,
    Workbench,
    section,
    ticked,
    typed_note,
)

NOTE = 'R9 and R8 are one transfer, split by the bank <b>"again"</b>'


@pytest.mark.parametrize(
    ("action", "page"),
    [
        ("/ledger/breaks/match", "/ledger/breaks"),
        ("/ledger/reconcile", "/ledger/breaks"),
        ("/ledger/breaks/{r9}/write-off", "/ledger/breaks/{r9}"),
    ],
)
def test_an_actions_address_loaded_again_leads_to_its_page(
    bench: Workbench, action: str, page: str
) -> None:
    r9 = bench.breaks[R9]

    again = bench.get(action.format(r9=r9))

    assert again.status_code == 303
    assert again.headers["location"] == page.format(r9=r9)


def test_a_match_done_redirects_to_the_page_showing_it(bench: Workbench) -> None:
    r9, d3 = bench.breaks[R9], bench.breaks[D3]

    done = bench.post("/ledger/breaks/match", {"break_id": [d3], "from_break": r9, "note": "n"})

    assert done.status_code == 303
    shown = bench.get(done.headers["location"])
    assert shown.status_code == 200 and "Matched by hand." in shown.text


def test_a_refused_match_from_the_queue_keeps_the_ticks_and_the_note(bench: Workbench) -> None:
    r9, r8 = bench.breaks[R9], bench.breaks[R8]
    before = bench.worked()

    refused = bench.post("/ledger/breaks/match", {"break_id": [r9, r8], "note": NOTE})

    assert refused.status_code == 409
    assert "a match needs at least one statement entry and one ledger movement" in refused.text
    assert ticked(refused.text) == {r9, r8}
    assert typed_note(refused.text, "match-note") == NOTE
    assert bench.worked() == before


def test_a_refused_match_from_a_break_keeps_the_ticks_and_the_note(bench: Workbench) -> None:
    r9, d3, mismatch = bench.breaks[R9], bench.breaks[D3], bench.breaks[MISMATCH]
    # Meanwhile, someone else wrote the mismatch off: it may no longer be matched.
    assert bench.post(f"/ledger/breaks/{mismatch}/write-off", {"note": "fee"}).status_code == 303
    before = bench.worked()

    refused = bench.post(
        "/ledger/breaks/match", {"break_id": [d3, mismatch], "from_break": r9, "note": NOTE}
    )

    assert refused.status_code == 409
    assert f"break {mismatch} is written off" in refused.text
    assert ticked(section(refused.text, "Match by hand") or "") == {d3}
    assert typed_note(refused.text, "match-note") == NOTE
    assert bench.worked() == before


def test_a_refused_write_off_keeps_the_note(bench: Workbench) -> None:
    r9 = bench.breaks[R9]
    too_long = "x" * 2_001

    refused = bench.post(f"/ledger/breaks/{r9}/write-off", {"note": too_long})

    assert refused.status_code == 400
    assert "at most 2000 characters" in refused.text
    assert typed_note(refused.text, "write-off-note") == too_long
    assert bench.worked()[2] == 0

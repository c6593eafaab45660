"""A break's page says what is true of it (issue 46, point 6): what writing it off does (a
duplicate posts nothing and is resolved at once), the movement that settled it, where its
write-off stands instead of a form that would be refused, and as partners to match by hand
only the open breaks it can be matched with."""

from __future__ import annotations

from tests.support.workbench import (
    D3,
    DUPLICATE,
    MISMATCH,
    R8,
    R9,
    Workbench,
    offered,
    section,
    shown_text,
)


def page_of(bench: Workbench, key: tuple[str, str]) -> str:
    answer = bench.get(f"/ledger/breaks/{bench.breaks[key]}")
    assert answer.status_code == 200
    return answer.text


def test_a_duplicate_says_its_write_off_posts_nothing_and_resolves_it_at_once(
    bench: Workbench,
) -> None:
    duplicate = bench.breaks[DUPLICATE]
    offer = shown_text(section(page_of(bench, DUPLICATE), "Write off") or "")

    assert "nothing is posted" in offer and "resolves the break at once" in offer
    assert "adjusting event of" not in offer and "pipeline" not in offer

    written_off = bench.post(f"/ledger/breaks/{duplicate}/write-off", {"note": "listed twice"})
    assert written_off.status_code == 303
    assert bench.status(duplicate) == ("resolved", "written_off")
    assert bench.worked()[2] == 0, "no event file"


def test_a_write_off_pending_or_committed_is_said_and_not_offered_again(bench: Workbench) -> None:
    r9 = bench.breaks[R9]
    assert "Write off</button>" in page_of(bench, R9)
    assert bench.post(f"/ledger/breaks/{r9}/write-off", {"note": "a fee"}).status_code == 303

    pending = page_of(bench, R9)
    assert "Write off</button>" not in pending
    assert "Write-off pending" in shown_text(section(pending, "Write off") or "")

    bench.commit_inbox()
    committed = page_of(bench, R9)
    assert "Write off</button>" not in committed
    assert "committed" in shown_text(section(committed, "Write off") or "")


def test_a_settled_write_off_shows_the_movement_that_settled_it(bench: Workbench) -> None:
    r9 = bench.breaks[R9]
    assert bench.post(f"/ledger/breaks/{r9}/write-off", {"note": "a fee"}).status_code == 303
    bench.commit_inbox()
    bench.reconcile()
    assert bench.status(r9) == ("resolved", "written_off")

    movement = shown_text(section(page_of(bench, R9), "Ledger movement") or "")

    assert "None" not in movement
    assert "12.00 EUR" in movement and f"recon-write-off-{r9}-1" in movement
    assert "adjustments" in movement, "the write-off's stream"


def test_only_breaks_that_can_be_matched_with_it_are_offered(bench: Workbench) -> None:
    r9, r8, d3, mismatch = (bench.breaks[k] for k in (R9, R8, D3, MISMATCH))

    # R9 is a statement entry alone: only a break with a ledger movement can match it.
    assert offered(section(page_of(bench, R9), "Match by hand") or "") == {d3, mismatch}
    # d3 is a ledger movement alone: every break with a statement entry can.
    assert offered(section(page_of(bench, D3), "Match by hand") or "") == {
        r9,
        r8,
        mismatch,
        bench.breaks[DUPLICATE],
    }
    # A break whose write-off is posted may not be matched: it is not offered.
    assert bench.post(f"/ledger/breaks/{mismatch}/write-off", {"note": "fee"}).status_code == 303
    assert offered(section(page_of(bench, R9), "Match by hand") or "") == {d3}


def test_no_match_form_is_shown_where_no_break_can_be_matched_with_it(bench: Workbench) -> None:
    r9, r8, d3, mismatch = (bench.breaks[k] for k in (R9, R8, D3, MISMATCH))
    for chosen in ([r9, d3], [r8, mismatch]):
        matched = bench.post("/ledger/breaks/match", {"break_id": chosen, "note": "by hand"})
        assert matched.status_code == 303

    match_section = section(page_of(bench, DUPLICATE), "Match by hand") or ""

    assert "No other break of account alice" in shown_text(match_section)
    assert "<form" not in match_section and "<textarea" not in match_section

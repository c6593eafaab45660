"""What a request for a path under a served folder may get (`web.served_files`): a regular
file inside the folder, found by its relative name, and nothing else, whatever the path a
client sends: `..`, absolute paths, backslashes, NUL bytes, symbolic links out of the folder.
"""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger_engine.web.served_files import served_file


def served_folder(tmp_path: Path) -> Path:
    """A folder with a page, a nested page, a subfolder, and beside it a secret file."""
    folder = tmp_path / "reports"
    (folder / "nested").mkdir(parents=True)
    (folder / "index.html").write_text("index")
    (folder / "nested" / "page.html").write_text("nested page")
    (tmp_path / "secret.cfg").write_text("secret")
    return folder


def test_a_file_inside_the_folder_is_served_by_its_relative_name(tmp_path: Path) -> None:
    folder = served_folder(tmp_path)

    assert served_file(folder, "index.html") == (folder / "index.html").resolve()
    assert served_file(folder, "nested/page.html") == (folder / "nested/page.html").resolve()


def test_names_that_reach_out_of_the_folder_or_name_no_file_are_refused(
    tmp_path: Path,
) -> None:
    folder = served_folder(tmp_path)
    outside = [
        "../secret.cfg",
        "nested/../../secret.cfg",
        str(tmp_path / "secret.cfg"),
        "/etc/passwd",
        "..\\secret.cfg",
        "nested\\..\\..\\secret.cfg",
        "index.html\x00.png",
        "",
        ".",
        "nested",
        "missing.html",
    ]

    assert {name: served_file(folder, name) for name in outside} == dict.fromkeys(outside)


def test_a_symbolic_link_is_followed_only_where_it_stays_inside(tmp_path: Path) -> None:
    folder = served_folder(tmp_path)
    os.symlink(tmp_path / "secret.cfg", folder / "out.html")
    os.symlink(tmp_path, folder / "up")
    os.symlink(folder / "nested" / "page.html", folder / "alias.html")

    assert served_file(folder, "out.html") is None
    assert served_file(folder, "up/secret.cfg") is None
    assert served_file(folder, "alias.html") == (folder / "nested/page.html").resolve()


# Paths a client might send: pieces of names, separators and dot segments in any order.
_PIECES = st.sampled_from(
    ["..", ".", "", "index.html", "nested", "page.html", "secret.cfg", "up", "\\", "\x00", "~"]
)
_PATHS = st.lists(_PIECES, max_size=6).map("/".join) | st.text(max_size=30)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(requested=_PATHS, leading=st.booleans())
def test_whatever_is_asked_what_is_served_is_a_file_inside_the_folder(
    tmp_path: Path, requested: str, leading: bool
) -> None:
    folder = tmp_path / "reports"
    if not folder.exists():
        served_folder(tmp_path)
        os.symlink(tmp_path, folder / "up")

    found = served_file(folder, ("/" if leading else "") + requested)

    assert found is None or (found.is_file() and found.is_relative_to(folder.resolve()))
    assert found is None or found.read_text() in ("index", "nested page")

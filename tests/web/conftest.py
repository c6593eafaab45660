"""The served workbench, for the tests of its pages (tests/support/workbench.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.workbench import Workbench, served_workbench


@pytest.fixture
def bench(database_url: str, tmp_path: Path) -> Iterator[Workbench]:
    """The workbench on a fresh database holding the breaks of one reconciliation."""
    with served_workbench(database_url, tmp_path) as served:
        yield served

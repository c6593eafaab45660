"""Fixtures for the engine's tests: a Python process with another hash seed, for the tests of
determinism (tests/support/other_process.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.other_process import OtherHashSeed, another_hash_seed


@pytest.fixture(scope="session")
def other_process() -> Iterator[OtherHashSeed]:
    """A Python process whose hash seed is not this one's, answering calls for the session."""
    with another_hash_seed() as other:
        yield other

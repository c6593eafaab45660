"""Reading a test database."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, text


def rows(engine: Engine, query: str, **params: Any) -> list[tuple]:
    """The rows of `query` (parameters bound by name, `:name`), each as a plain tuple."""
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(query), params)]

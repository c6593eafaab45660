"""The names of the report's files: a page per audit run and a page per reconciliation, each
named by its kind and its UTC time, its summary beside it, and one index."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

PAGE_PREFIX = "audit-"
RECONCILIATION_PREFIX = "reconciliation-"
INDEX_NAME = "index.html"
PAGE_GLOB = f"{PAGE_PREFIX}*.html"
RECONCILIATION_GLOB = f"{RECONCILIATION_PREFIX}*.html"
_STAMP_FORMAT = "%Y%m%dT%H%M%S%fZ"  # sorts as it reads: the newest page's name is the greatest


def page_name(created: datetime, prefix: str = PAGE_PREFIX) -> str:
    """The file name of the page of a run written at `created` (an audit's, unless `prefix`
    says another kind)."""
    return f"{prefix}{created.astimezone(UTC).strftime(_STAMP_FORMAT)}.html"


def page_created(page: Path, prefix: str = PAGE_PREFIX) -> datetime | None:
    """When a page was written, read from its name; None for a name not made by `page_name`
    with `prefix`."""
    if not page.stem.startswith(prefix):
        return None
    stamp = page.stem.removeprefix(prefix)
    try:
        return datetime.strptime(stamp, _STAMP_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None


def summary_path(page: Path) -> Path:
    """Where a page's summary (its verdict and counts, for the index) is kept."""
    return page.with_suffix(".json")

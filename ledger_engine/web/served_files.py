"""Which file a request for a path under a served folder may get: one inside the folder, and
nothing else.

A request's path comes from a URL, so it is whatever a client chose: `..` segments (also
percent-encoded, which the router decodes before this sees them), absolute paths, backslashes,
NUL bytes, or a name that is a symbolic link leading out of the folder. The path is refused
before it touches the file system if its form is wrong, and after resolution (symbolic links
followed) if the file it names is not a regular file inside the folder's own resolved path.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

# Characters no served name holds: a NUL byte ends a path for the operating system, and a
# backslash is a separator on another one.
_NEVER = ("\x00", "\\")


def served_file(folder: Path, requested: str) -> Path | None:
    """The regular file `requested` (a relative path with `/` separators) names inside
    `folder`, resolved; None if it names none, or anything outside the folder."""
    if not requested or any(bad in requested for bad in _NEVER):
        return None
    relative = PurePosixPath(requested)
    if relative.is_absolute() or any(part in ("..", ".") for part in relative.parts):
        return None
    root = folder.resolve()
    candidate = (root / relative).resolve()
    if not candidate.is_relative_to(root) or not candidate.is_file():
        return None
    return candidate

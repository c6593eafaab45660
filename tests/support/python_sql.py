"""Finding SQL kept in Python: the statements a module writes as string constants (or as the
literal head of an f-string), docstrings aside. The checks that each package keeps its SQL in
files (the store's, reconciliation storage's, the audit's, the command's) share this reader."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

# A string constant that starts like an SQL statement.
SQL_START = re.compile(
    r"\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|GRANT|REVOKE|LOCK|SET|RESET|TRUNCATE"
    r"|COPY|SAVEPOINT|RELEASE|ROLLBACK|WITH|BEGIN|COMMIT)\b"
)


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def statements_in_python(paths: Iterable[Path]) -> list[tuple[Path, int, str]]:
    """Each string constant of the modules at `paths` that starts like an SQL statement (an
    f-string's literal parts included), docstrings aside: (path, line, text)."""
    found = []
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        docstrings = _docstrings(tree)
        for node in ast.walk(tree):
            text = node.value if isinstance(node, ast.Constant) else None
            if isinstance(text, str) and id(node) not in docstrings and SQL_START.match(text):
                found.append((path, node.lineno, text))
    return found

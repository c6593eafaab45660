"""Shipping an application's own code to Spark's executors.

An executor imports a ledger's functions by module and name, so it needs the user's modules
and whatever of the user's they import (`ledger_engine.apps.user_code` finds them and packs
them into one zip). The platform and the installed packages are there already: the executors
run the same environment. Without shipping, a user's code is missing on a standalone cluster
and even in `local[*]`, whose Python workers do not see the driver's `sys.path`.

The zip goes as an archive (`SparkContext.addArchive`), which Spark unpacks on every node into
a folder of the archive's name under SparkFiles' root, and that folder goes on the Python
workers' path. Unpacked rather than imported from the zip itself (`addPyFile`): a package's
module then has a real `__file__`, so a package can read the data files beside it, which it
cannot from inside a zip.
"""

from __future__ import annotations

from pathlib import Path

from pyspark import SparkContext
from pyspark.sql import SparkSession

from ledger_engine.apps.user_code import ApplicationCode, application_code, pack
from ledger_engine.core.declarations import StreamingLedger


def ship_application(spark: SparkSession, ledger: StreamingLedger) -> Path | None:
    """Make `ledger`'s code of the user's importable on `spark`'s executors; return the
    archive sent, or `None` when the application has no code of the user's."""
    return ship_code(spark.sparkContext, application_code(ledger))


def ship_code(context: SparkContext, code: ApplicationCode) -> Path | None:
    """Send `code` to `context`'s executors, once per content (an unchanged application is
    not sent again; a changed one goes under a new name)."""
    archive = pack(code)
    if archive is None:
        return None
    if archive.name not in _python_includes(context):
        context.addArchive(str(archive))
        _python_includes(context).append(archive.name)
    return archive


def _python_includes(context: SparkContext) -> list[str]:
    """The names, relative to SparkFiles' root, that every Python worker puts on its path
    before it unpickles a task: the list `addPyFile` appends a zip's name to. PySpark has no
    public call for an unpacked archive, so ours goes on the same list."""
    includes = context._python_includes
    assert isinstance(includes, list), "PySpark no longer keeps _python_includes"
    return includes

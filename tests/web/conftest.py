"""The served workbench, for the tests of its pages (tests/support/workbench.py): one server a
module, and for each test a workbench as the seed left it."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.support.workbench import Workbench, WorkbenchServer, running_workbench


@pytest.fixture(scope="module")
def workbench_server(
    module_make_database_url: Callable[..., str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkbenchServer]:
    """The workbench's server, on the breaks of one reconciliation, for a test module."""
    work = tmp_path_factory.mktemp("workbench")
    with running_workbench(module_make_database_url(), work) as server:
        yield server


@pytest.fixture
def bench(workbench_server: WorkbenchServer) -> Iterator[Workbench]:
    """The workbench on a fresh copy of those breaks."""
    with workbench_server.fresh() as fresh:
        yield fresh

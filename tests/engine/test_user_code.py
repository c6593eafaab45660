"""An application of the user's own, laid out however a user lays it out (modules importing
siblings, a package with a subpackage and relative imports, a module imported inside a
function at call time or by a computed name, a data file the package reads beside itself),
not installed and not on `PYTHONPATH`, runs on Spark's executors as it runs in-process: the
platform sends the executors everything of the user's the application imports, and the result
equals `run_serial`'s."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger_engine import run_serial, run_spark
from ledger_engine.apps import load_ledger
from ledger_engine.apps.bank.ledger import build_ledger
from ledger_engine.apps.user_code import application_code, pack
from ledger_engine.runtime.spark.engine import ExecutionOptions
from ledger_engine.runtime.spark.shipping import ship_application
from tests.support.user_apps import Layout, layouts, user_app_events, write_user_app

SIMPLE_TRADE = Path(__file__).parents[1] / "support" / "apps" / "simple_trade.py"
ON_SPARK = ExecutionOptions(bins=2)
# Each example writes a folder of its own under the test's `tmp_path` (`fresh`).
SHARED_TMP = [HealthCheck.function_scoped_fixture]


def fresh(tmp_path: Path) -> Path:
    """A folder of its own for one generated example (a test's `tmp_path` serves them all)."""
    return Path(os.path.join(tmp_path, f"app-{len(os.listdir(tmp_path))}"))


@settings(max_examples=40, deadline=None, suppress_health_check=SHARED_TMP)
@given(layout=layouts())
def test_the_code_found_is_every_module_of_the_users_and_nothing_else(tmp_path, layout):
    app = write_user_app(fresh(tmp_path), layout)
    code = application_code(load_ledger(app.spec))
    assert tuple(unit.name for unit in code.units) == app.modules
    archive = pack(code, tmp_path)
    assert archive is not None
    with zipfile.ZipFile(archive) as packed:
        names = set(packed.namelist())
    written = {
        path.relative_to(app.folder).as_posix()
        for path in app.folder.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert names == written  # data files included, the driver's caches left out


def test_the_platforms_own_application_ships_nothing():
    assert application_code(build_ledger()).units == ()
    assert pack(application_code(build_ledger())) is None


def test_an_unchanged_application_packs_to_the_same_archive_and_a_changed_one_to_another(
    tmp_path,
):
    app = write_user_app(tmp_path / "app", Layout(True, True, "call time", True, False))
    ledger = load_ledger(app.spec)
    first = pack(application_code(ledger), tmp_path)
    assert pack(application_code(ledger), tmp_path) == first
    (limits,) = app.folder.rglob("limits.json")
    limits.write_text('{"max_move": 1}', encoding="utf-8")
    changed = pack(application_code(ledger), tmp_path)
    assert changed is not None and changed != first


@settings(max_examples=8, deadline=None, suppress_health_check=SHARED_TMP)
@given(layout=layouts(), seed=st.integers(0, 2**16))
def test_every_layout_runs_on_spark_as_serially(spark, tmp_path, layout, seed):
    app = write_user_app(fresh(tmp_path), layout)
    assert str(app.folder) not in os.environ.get("PYTHONPATH", "")
    ledger = load_ledger(app.spec)
    events = user_app_events(240, accounts=16, seed=seed)
    result = run_spark(spark, ledger, events, options=ON_SPARK)
    assert result == run_serial(ledger, events)
    assert {r.detail for r in result.rejections} >= {"over the limit"}


def test_an_application_is_sent_once_per_content(spark, tmp_path):
    app = write_user_app(tmp_path / "app", Layout(False, False, "module level", False, True))
    ledger = load_ledger(app.spec)
    sent = ship_application(spark, ledger)
    assert sent is not None and ship_application(spark, ledger) == sent
    listed = [Path(uri).name for uri in spark.sparkContext.listArchives]
    assert listed.count(sent.name) == 1


def test_the_seeds_example_in_a_file_of_its_own_runs_on_spark_as_serially(spark):
    ledger = load_ledger(f"{SIMPLE_TRADE}:build_ledger")
    from simple_trade import sample_events  # loaded from its file by load_ledger

    events = sample_events(600, accounts=30, seed=5)
    result = run_spark(spark, ledger, events, options=ON_SPARK)
    assert result == run_serial(ledger, events)
    assert {r.payload["success"] for r in result.results} == {True, False}


@pytest.mark.parametrize("spec_form", ["file", "module"])
def test_a_module_inside_a_package_loads_as_the_packages_module(tmp_path, spec_form, monkeypatch):
    app = write_user_app(tmp_path / "app", Layout(True, True, "module level", True, False))
    (package,) = app.modules
    if spec_form == "module":  # `package.app:build_ledger`, the package on the driver's path
        monkeypatch.syspath_prepend(str(app.folder))
        spec = f"{package}.app:build_ledger"
    else:
        spec = app.spec
    ledger = load_ledger(spec)
    (stream,) = [s for s in ledger.streams.values() if s.name == "Moves"]
    assert stream.fn.__module__ == f"{package}.rules"


def test_a_file_whose_name_another_module_took_is_refused(tmp_path):
    taken = tmp_path / "json.py"  # the standard library's json is imported already
    taken.write_text("def build_ledger():\n    raise AssertionError\n", encoding="utf-8")
    with pytest.raises(ValueError, match="'json' is taken"):
        load_ledger(f"{taken}:build_ledger")


def test_a_namespace_package_on_the_path_twice_packs_each_file_once(tmp_path, monkeypatch):
    # `PYTHONPATH=$PWD` and pytest's rootdir both put the checkout on the path: the tests'
    # own `tests` namespace package then lists its folder twice.
    package = tmp_path / "root" / "ns_listed_twice"
    package.mkdir(parents=True)
    (package / "trade.py").write_bytes(SIMPLE_TRADE.read_bytes())
    for _ in range(2):
        monkeypatch.syspath_prepend(str(package.parent))
    ledger = load_ledger("ns_listed_twice.trade:build_ledger")
    code = application_code(ledger)
    assert [(unit.name, unit.locations) for unit in code.units] == [
        ("ns_listed_twice", (package.resolve(),))
    ]
    assert [name for _, name in code.files()] == ["ns_listed_twice/trade.py"]

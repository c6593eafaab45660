"""The Spark session's JVMs compile as much as their work needs: the engine's sessions with
the quick compiler alone, SQL work (reconciliation's joins) with every tier."""

from __future__ import annotations

from ledger_engine.runtime.spark.session import session_conf

QUICK = "-XX:TieredStopAtLevel=1"


def _options(jit: str) -> tuple[str, str | None]:
    conf = session_conf("local[2]", "a session", "127.0.0.1", "1g", jit)  # type: ignore[arg-type]
    return conf.get("spark.driver.extraJavaOptions"), conf.get("spark.executor.extraJavaOptions")


def test_a_quick_session_stops_its_driver_and_executors_at_the_quick_compiler() -> None:
    driver, executors = _options("quick")
    assert QUICK in driver.split()
    assert executors == QUICK
    assert any(option.startswith("-Dlog4j2.configurationFile=") for option in driver.split())


def test_a_full_session_leaves_the_jvms_every_tier(spark) -> None:
    """Even in a process whose JVM was started for a quick session (`spark`, the tests' own):
    a new configuration starts from that JVM's settings, the quick compiler among them."""
    driver, executors = _options("full")
    assert QUICK not in driver.split()
    assert driver.startswith("-Dlog4j2.configurationFile=")
    assert QUICK not in (executors or "").split()


def test_the_running_jvm_was_started_with_the_sessions_compiler(spark) -> None:
    # The tests' session is a quick one (the default): its JVM says how it was started.
    runtime = spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    arguments = list(runtime.getInputArguments())
    assert QUICK in arguments

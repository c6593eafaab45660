"""The production-like setup (docker-compose.yml and docker/*.Dockerfile) is well formed.

No Docker engine runs here, but `docker compose config -q` checks the file against the Compose
specification without one; where the Docker CLI has no compose plugin, the YAML is parsed with
PyYAML instead. Either way the services and their key settings are checked from the YAML.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from ledger_engine.cli import build_parser
from tests.support.documented import ledger_commands

REPO_ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO_ROOT / "docker-compose.yml"
AIRFLOW_DOCKERFILE = "docker/airflow.Dockerfile"
SPARK_DOCKERFILE = "docker/spark.Dockerfile"
BASE_IMAGE = "apache/airflow:3.3.2-python3.11"
AIRFLOW_SERVICES = [
    "airflow-init",
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
]
SPARK_MASTER_URL = "spark://spark-master:7077"
# A ${NAME} or ${NAME:-default} interpolation, and nothing else.
INTERPOLATION = re.compile(r"^\$\{[A-Z][A-Z0-9_]*(:-[^}]*)?\}$")


def compose_command() -> list[str] | None:
    """`docker compose` if the Docker CLI with the compose plugin is installed."""
    docker = shutil.which("docker")
    if docker is None:
        return None
    probe = subprocess.run(
        [docker, "compose", "version"], capture_output=True, text=True, timeout=60, check=False
    )
    return [docker, "compose"] if probe.returncode == 0 else None


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    with COMPOSE_FILE.open(encoding="utf-8") as handle:
        return yaml.safe_load(handle)  # resolves the file's anchors and `<<` merge keys


def environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment", {})
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {key: str(value) for key, value in env.items()}


def test_compose_file_is_valid(compose: dict[str, Any]) -> None:
    command = compose_command()
    if command is None:
        # No compose plugin here: the YAML must at least parse into a Compose file's shape.
        assert isinstance(compose, dict)
        assert isinstance(compose.get("services"), dict) and compose["services"]
        assert all(isinstance(s, dict) for s in compose["services"].values())
        return
    result = subprocess.run(
        [*command, "-f", str(COMPOSE_FILE), "config", "-q"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_services(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert {"postgres", "spark-master", "spark-worker", *AIRFLOW_SERVICES} <= set(services)


def test_postgres_is_the_system_of_record(compose: dict[str, Any]) -> None:
    postgres = compose["services"]["postgres"]
    assert str(postgres["image"]).startswith("postgres:16")
    assert "pg_isready" in " ".join(postgres["healthcheck"]["test"])
    env = environment(postgres)
    for key in ("POSTGRES_USER", "POSTGRES_PASSWORD", "POSTGRES_DB"):
        assert INTERPOLATION.match(env[key]), f"{key} must come from the environment"


def test_airflow_services(compose: dict[str, Any]) -> None:
    for name in AIRFLOW_SERVICES:
        service = compose["services"][name]
        assert service["build"]["dockerfile"] == AIRFLOW_DOCKERFILE, name
        env = environment(service)
        assert "@postgres:5432/" in env["LEDGER_DATABASE_URL"], name
        assert env["LEDGER_SPARK_MASTER"] == SPARK_MASTER_URL, name
        assert env["AIRFLOW__CORE__LOAD_EXAMPLES"] == "False", name
        assert any(str(v).startswith("./dags:/opt/airflow/dags") for v in service["volumes"]), name
        assert service["depends_on"]["postgres"]["condition"] == "service_healthy", name
    commands = {name: compose["services"][name]["command"] for name in AIRFLOW_SERVICES}
    assert commands["airflow-apiserver"] == ["api-server"]
    assert commands["airflow-scheduler"] == ["scheduler"]
    assert commands["airflow-dag-processor"] == ["dag-processor"]
    assert commands["airflow-triggerer"] == ["triggerer"], "it runs the inboxes' watchers"
    # The watchers read the event and statement inboxes the scheduler's tasks take files from.
    data = {v for v in compose["services"]["airflow-scheduler"]["volumes"] if "ledger-data" in v}
    assert data and data <= set(compose["services"]["airflow-triggerer"]["volumes"])
    # The breaks workbench (in the API server) lands write-offs in that event inbox, and its
    # forms' keys are derived from a secret every API server shares.
    apiserver = compose["services"]["airflow-apiserver"]
    assert data <= set(apiserver["volumes"])
    assert INTERPOLATION.match(environment(apiserver)["AIRFLOW__API__SECRET_KEY"])
    for name in AIRFLOW_SERVICES[1:]:
        depends = compose["services"][name]["depends_on"]
        assert depends["airflow-init"]["condition"] == "service_completed_successfully", name


def test_spark_master_and_worker(compose: dict[str, Any]) -> None:
    master = compose["services"]["spark-master"]
    worker = compose["services"]["spark-worker"]
    for service in (master, worker):
        assert service["build"]["dockerfile"] == SPARK_DOCKERFILE
    assert "org.apache.spark.deploy.master.Master" in master["command"]
    assert "org.apache.spark.deploy.worker.Worker" in worker["command"]
    assert SPARK_MASTER_URL in worker["command"]
    # Executors read the landed files: the data volume is where the driver has it.
    scheduler = compose["services"]["airflow-scheduler"]
    data_mounts = {v for v in scheduler["volumes"] if str(v).endswith(":/opt/ledger-data")}
    assert data_mounts and data_mounts <= set(worker["volumes"])


def test_no_secret_is_written_into_the_file(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        for key, value in environment(service).items():
            if re.search(r"PASSWORD|SECRET|FERNET", key):
                assert INTERPOLATION.match(value), f"{name}: {key} must come from the environment"


def test_published_ports_are_local_only(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} beyond localhost"


@pytest.mark.parametrize("dockerfile", [AIRFLOW_DOCKERFILE, SPARK_DOCKERFILE])
def test_images_share_one_base_with_the_project_installed(dockerfile: str) -> None:
    text = (REPO_ROOT / dockerfile).read_text(encoding="utf-8")
    assert re.search(rf"^FROM {re.escape(BASE_IMAGE)}$", text, re.MULTILINE), dockerfile
    assert "--constraint /opt/ledger/constraints.txt" in text
    assert "openjdk-17" in text, "the Spark driver and workers need Java 17"
    for path in re.findall(r"^COPY (?:--\S+ )*(.+) /opt/ledger/\S*$", text, re.MULTILINE):
        for source in path.split():
            assert (REPO_ROOT / source).exists(), f"{dockerfile} copies missing {source}"


def test_the_ledger_commands_the_file_shows_are_the_commands_ledger_takes() -> None:
    """The header's walk-through (statements: where they go, a sample, landing one) uses
    commands and options `ledger` parses."""
    header = COMPOSE_FILE.read_text(encoding="utf-8").split("\nname:")[0]
    shown = ledger_commands(
        "\n".join(line for line in header.splitlines() if "docker compose exec" in line)
    )
    assert ["statements", "sample", "--source", "Main bank"] in shown
    assert ["statements", "land", "/tmp/nov-04.xml", "--source", "Main bank"] in shown
    for args in shown:
        parsed, extra = build_parser().parse_known_args(args)
        assert extra == [] or parsed.command == "psql", args

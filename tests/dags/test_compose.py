"""The production-like setup (docker-compose.yml and docker/*.Dockerfile) is well formed.

The file, as PyYAML loads it, is always validated against the Compose Specification's JSON
schema, vendored in tests/support/compose-spec.json (its source, commit and license in
compose-spec.README beside it), with `jsonschema`; where the Docker CLI with the compose plugin
is installed, `docker compose config -q` checks it too (no Docker engine needs to run for
that). The services and their key settings are then checked from the YAML.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from jsonschema import validators

from ledger_engine.cli import build_parser
from tests.support.documented import ledger_commands

REPO_ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO_ROOT / "docker-compose.yml"
COMPOSE_SCHEMA = REPO_ROOT / "tests" / "support" / "compose-spec.json"
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


@pytest.fixture(scope="module")
def compose_validator() -> jsonschema.protocols.Validator:
    """A validator of the Compose Specification's schema, of the draft its `$schema` names.

    The schema names draft-07 as `https://json-schema.org/draft-07/schema`, which `jsonschema`
    knows only as `http://json-schema.org/draft-07/schema#`: the name is read with `http` and
    the trailing `#` before looking the draft up, and a name still unknown fails the test
    rather than falling back to another draft."""
    schema = json.loads(COMPOSE_SCHEMA.read_text(encoding="utf-8"))
    declared = schema["$schema"]
    known = re.sub(r"^https://", "http://", declared).rstrip("#") + "#"
    validator = validators.validator_for({"$schema": known}, default=None)
    assert validator is not None, f"the schema declares a draft jsonschema lacks: {declared}"
    validator.check_schema(schema)
    return validator(schema, format_checker=validator.FORMAT_CHECKER)


def schema_errors(validator: jsonschema.protocols.Validator, document: Any) -> list[str]:
    """Each way `document` breaks the schema, as `<JSON path>: <message>`."""
    return [
        f"{error.json_path}: {error.message}"
        for error in sorted(validator.iter_errors(document), key=lambda e: e.json_path)
    ]


def test_the_compose_file_is_valid_by_the_specifications_schema(
    compose: dict[str, Any], compose_validator: jsonschema.protocols.Validator
) -> None:
    assert schema_errors(compose_validator, compose) == []


def test_docker_compose_finds_the_compose_file_valid() -> None:
    command = compose_command()
    if command is None:
        pytest.skip("`docker compose` is not installed here: its check of the file was not run")
    result = subprocess.run(
        [*command, "-f", str(COMPOSE_FILE), "config", "-q"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_the_schema_refuses_a_broken_compose_file(
    compose: dict[str, Any], compose_validator: jsonschema.protocols.Validator
) -> None:
    """The validation bites: ports that are not a list, and a top-level key the specification
    does not define (only `x-` extensions may be added), are each refused."""
    ports_not_a_list = copy.deepcopy(compose)
    ports_not_a_list["services"]["postgres"]["ports"] = "not-a-list"
    errors = schema_errors(compose_validator, ports_not_a_list)
    assert errors == ["$.services.postgres.ports: 'not-a-list' is not of type 'array'"]

    errors = schema_errors(compose_validator, compose | {"servicez": {}})
    assert errors == ["$: 'servicez' does not match any of the regexes: '^x-'"]

    assert schema_errors(compose_validator, compose | {"x-notes": {"any": "thing"}}) == []


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

"""Where a report page comes from: who wrote it, and which batches it is about.

Each entry point that writes a page says who it is, as a `Provenance` handed down to the
page (nothing is looked up behind the caller's back): an Airflow task names its DAG, its DAG
run and itself (`from_airflow`); a `ledger` command names itself, the host it ran on and the
user who ran it (`from_command`). The page shows it, and its summary keeps it (`to_dict`) so
that the index shows it too.

A `BatchSpan` is a run of consecutive batch ids (the commit refuses gaps, so the batches
between two ids are exactly those ids): the batches a pipeline run added (`RunBatches`), an
audit covered, or a reconciliation's ledger side read anew. Pages whose spans overlap are
about the same batches, and link to each other (`links`).
"""

from __future__ import annotations

import getpass
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

AIRFLOW = "airflow"  # written by a task of an Airflow DAG run
COMMAND = "command"  # written by a `ledger` command


@dataclass(frozen=True)
class Provenance:
    """Who wrote a page: a task of an Airflow DAG run (`dag_id`, `run_id`, `task_id`), or a
    `ledger` command (`command`, `host`, `user`; the user None where the system has no name
    for it)."""

    kind: str  # AIRFLOW or COMMAND
    dag_id: str | None = None
    run_id: str | None = None
    task_id: str | None = None
    command: str | None = None
    host: str | None = None
    user: str | None = None

    @classmethod
    def from_airflow(cls, dag_id: str, run_id: str, task_id: str) -> Provenance:
        """The task `task_id` of the run `run_id` of the DAG `dag_id`."""
        return cls(AIRFLOW, dag_id=dag_id, run_id=run_id, task_id=task_id)

    @classmethod
    def from_command(
        cls, command: str, *, host: str | None = None, user: str | None = None
    ) -> Provenance:
        """The command `command` ("ledger audit"), run here: on this host (`host`) by this
        process's user (`user`), unless given."""
        return cls(
            COMMAND,
            command=command,
            host=host if host is not None else socket.gethostname(),
            user=user if user is not None else _user(),
        )

    def describe(self) -> str:
        """In one line, as the page's header and the index say it: "airflow ledger_pipeline
        <run id> (task write_audit_report)", the way a run lease names a DAG run; "ledger
        audit (user@host)"."""
        if self.kind == AIRFLOW:
            return f"airflow {self.dag_id} {self.run_id} (task {self.task_id})"
        where = f"{self.user}@{self.host}" if self.user else f"on {self.host}"
        return f"{self.command} ({where})"

    def facts(self) -> list[tuple[str, str]]:
        """(what, value) pairs for a page to list: the DAG, the run and the task; or the
        command, the host and the user (those known)."""
        if self.kind == AIRFLOW:
            named = [("DAG", self.dag_id), ("DAG run", self.run_id), ("task", self.task_id)]
        else:
            named = [("command", self.command), ("host", self.host), ("user", self.user)]
        return [(what, value) for what, value in named if value is not None]

    def to_dict(self) -> dict[str, str]:
        """JSON-able form (a page's summary): the kind and the fields known."""
        fields = {
            "kind": self.kind,
            "dag_id": self.dag_id,
            "run_id": self.run_id,
            "task_id": self.task_id,
            "command": self.command,
            "host": self.host,
            "user": self.user,
        }
        return {key: value for key, value in fields.items() if value is not None}

    @classmethod
    def from_dict(cls, data: Any) -> Provenance | None:
        """Read back from a summary; None for anything `to_dict` did not write (a summary is
        a file: it may be old, or edited)."""
        if not isinstance(data, Mapping) or data.get("kind") not in (AIRFLOW, COMMAND):
            return None
        keys = ("dag_id", "run_id", "task_id", "command", "host", "user")
        if not all(isinstance(data.get(k), str | None) for k in keys):
            return None
        return cls(data["kind"], **{k: data.get(k) for k in keys})


def _user() -> str | None:
    """This process's user name, or None where it has none (a container's bare uid)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None


@dataclass(frozen=True)
class BatchSpan:
    """The batches `first` to `last`, both included (never empty: no batch is None)."""

    first: int
    last: int

    def __post_init__(self) -> None:
        if not 0 <= self.first <= self.last:
            raise ValueError(f"no batches {self.first} to {self.last}")

    @classmethod
    def between(cls, first: int, last: int) -> BatchSpan | None:
        """The batches `first` to `last`; None when there are none (`last < first`)."""
        return cls(first, last) if first <= last else None

    @classmethod
    def covering(cls, batch_ids: Iterable[int]) -> BatchSpan | None:
        """The span of consecutive ids `batch_ids` (one run's batches); None for no id."""
        ids = list(batch_ids)
        return cls(min(ids), max(ids)) if ids else None

    @property
    def batches(self) -> int:
        """How many batches."""
        return self.last - self.first + 1

    def overlaps(self, other: BatchSpan) -> bool:
        """Whether a batch is in both."""
        return self.first <= other.last and other.first <= self.last

    def describe(self) -> str:
        """In words: "batch 7", "batches 7–9"."""
        if self.first == self.last:
            return f"batch {self.first:,}"
        return f"batches {self.first:,}–{self.last:,}"

    def to_dict(self) -> dict[str, int]:
        """JSON-able form (a page's summary)."""
        return {"first_batch": self.first, "last_batch": self.last}

    @classmethod
    def from_dict(cls, data: Any) -> BatchSpan | None:
        """Read back from a summary; None for none, or anything `to_dict` did not write."""
        if not isinstance(data, Mapping):
            return None
        first, last = data.get("first_batch"), data.get("last_batch")
        if not (_whole(first) and _whole(last)) or not 0 <= first <= last:
            return None
        return cls(first, last)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class RunBatches:
    """The batches the pipeline run before an audit committed: `span`, or None when it
    committed none (it found nothing new, or replayed only batches committed before)."""

    span: BatchSpan | None

    @classmethod
    def from_summary(cls, summary: Mapping[str, Any] | None) -> RunBatches | None:
        """From the micro-batch task's summary (`tasks.pipeline_dag.run_summary`); None when
        there is none (the task failed: what it committed is not known)."""
        if summary is None:
            return None
        return cls(BatchSpan.from_dict(summary))

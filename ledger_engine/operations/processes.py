"""Processes started in sessions of their own and stopped as a whole, leaving none behind.

A `ProcessGroup` starts each command in a new session (so a Ctrl-C at the terminal reaches
only the process that started them, which then stops them in order) with a marker in its
environment, `_LEDGER_STACK=<the starter's pid>`, that its descendants inherit. Its members
are found in `/proc`, never by name: the processes of those sessions (a descendant that makes
a process group of its own, as Airflow's task processes and Spark's Python daemon do, stays
in its session), and every process carrying the marker (one that makes a session of its own,
as a server daemonizing does, still carries it). Neither alone is enough: a process that
rewrites its title (Airflow's API server, executor workers and log servers do) shows its
title where /proc shows the environment, so /proc loses the marker of it and of what it forks
(not of the programs they run: Spark's JVM shows it again).

`stop()` sends SIGTERM to each command's process group, waits for every member to end, sends
SIGKILL to whatever is left after a grace period, and reaps: the starter is made a child
subreaper (Linux `prctl`), so descendants orphaned on the way become its children and it
collects them instead of leaving them defunct.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

MARKER = "_LEDGER_STACK"
PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
POLL_SECONDS = 0.2


@dataclass(frozen=True)
class ProcessInfo:
    """One process as `/proc/<pid>/stat` shows it."""

    pid: int
    state: str  # `Z`: ended, waiting to be reaped by its parent
    ppid: int
    session: int


def process_info(pid: int) -> ProcessInfo | None:
    """The process `pid` from `/proc`, or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name, in parentheses, may hold spaces and parentheses: split after the last.
    fields = stat[stat.rindex(")") + 2 :].split()
    return ProcessInfo(pid, fields[0], int(fields[1]), int(fields[3]))


def carries(pid: int, marker: str, value: str) -> bool:
    """Whether process `pid` started with `marker=value` in its environment."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:  # gone, a zombie, or another user's
        return False
    return f"{marker}={value}".encode() in environ.split(b"\0")


def all_pids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def become_subreaper() -> bool:
    """Make this process adopt its orphaned descendants (Linux); False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


@dataclass
class ProcessGroup:
    """Commands started in sessions of their own, their descendants, and how to stop them all.

    `marker_value` tells this group's processes apart from another group's (default: this
    process's pid)."""

    marker_value: str = field(default_factory=lambda: str(os.getpid()))
    started: dict[str, subprocess.Popen] = field(default_factory=dict)
    # A second stop request (a second Ctrl-C) cuts the grace period short.
    hurry: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        become_subreaper()

    def start(
        self, name: str, args: list[str], env: Mapping[str, str], log: Path, cwd: Path
    ) -> subprocess.Popen:
        """Start `args` as `name`, in a session of its own, its output in the file `log`."""
        assert name not in self.started, f"{name} started twice"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("wb") as out:
            process = subprocess.Popen(
                args,
                env={**env, MARKER: self.marker_value},
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.started[name] = process
        return process

    def exited(self) -> dict[str, int]:
        """The started commands that have ended, with their exit codes."""
        return {name: p.returncode for name, p in self.started.items() if p.poll() is not None}

    def members(self) -> list[ProcessInfo]:
        """Every live or unreaped process of the group (see the module's docstring)."""
        sessions = {p.pid for p in self.started.values()}
        found = []
        for pid in all_pids():
            info = process_info(pid)
            if info is None or pid == os.getpid():
                continue
            if info.session in sessions or carries(pid, MARKER, self.marker_value):
                found.append(info)
        return found

    def reap(self) -> None:
        """Collect the started commands that ended and the adopted descendants that did."""
        for process in self.started.values():
            process.poll()
        started = {p.pid for p in self.started.values()}
        for info in map(process_info, all_pids()):
            # Only zombies, and not the started ones (Popen must read their exit codes).
            if info and info.state == "Z" and info.ppid == os.getpid() and info.pid not in started:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(info.pid, os.WNOHANG)

    def stop(
        self, grace_seconds: float, kill_wait_seconds: float = 10.0, say: Callable = print
    ) -> list[ProcessInfo]:
        """Stop every member: SIGTERM to each command's process group, then SIGKILL to what is
        left after `grace_seconds` (or at once after `hurry` is set); reap them. Return the
        processes still there after `kill_wait_seconds` more (none, unless one is stuck in the
        kernel)."""
        for process in self.started.values():
            if process.poll() is None:
                _signal_group(process.pid, signal.SIGTERM)
        left = self._wait_until_gone(time.monotonic() + grace_seconds, self.hurry)
        if left:
            say(f"{len(left)} process(es) still running: SIGKILL")
            for info in left:
                _signal(info.pid, signal.SIGKILL)
            left = self._wait_until_gone(time.monotonic() + kill_wait_seconds, None)
        return left

    def _wait_until_gone(self, deadline: float, hurry: threading.Event | None) -> list[ProcessInfo]:
        while True:
            self.reap()
            left = self.members()
            if not left or time.monotonic() >= deadline or (hurry and hurry.is_set()):
                return left
            time.sleep(POLL_SECONDS)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def describe(processes: Iterable[ProcessInfo]) -> str:
    """`pid (command line)` of each process, for a message."""
    shown = []
    for info in processes:
        try:
            raw = Path(f"/proc/{info.pid}/cmdline").read_bytes()
        except OSError:
            raw = b""
        command = raw.replace(b"\0", b" ").decode(errors="replace").strip() or "?"
        shown.append(f"{info.pid} [{info.state}] ({command[:120]})")
    return ", ".join(shown)

"""Run by tests/operations/test_processes.py in a child Python (the group makes its process a
child subreaper, which the pytest process must not become):

    python group_stop.py WORKDIR

Starts three commands in a `ProcessGroup`, waits until every process they make is there, stops
the group with a short grace period, and prints, as JSON on its last line, what it saw before
and after.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from ledger_engine.operations.processes import ProcessGroup, all_pids, process_info

PY = sys.executable
COMMANDS = {
    # Ends only on SIGKILL.
    "stubborn": ["sh", "-c", "trap '' TERM; while :; do sleep 0.1; done"],
    # Leaves a child in a session of its own and ends at once, orphaning it.
    "escaper": [
        PY,
        "-c",
        "import subprocess; subprocess.Popen(['sleep', '601'], start_new_session=True)",
    ],
    # Has a child in a process group of its own (in its session); both end on SIGTERM.
    "parent": [
        PY,
        "-c",
        "import os, subprocess; subprocess.Popen(['sleep', '602'], process_group=0);"
        " os.execvp('sleep', ['sleep', '603'])",
    ],
}
SLEEPS = {"sleep 601", "sleep 602", "sleep 603"}


def command_of(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode().strip()


def main(work: Path) -> dict:
    group = ProcessGroup()
    for name, command in COMMANDS.items():
        group.start(name, command, os.environ, work / f"{name}.log", work)
    deadline = time.monotonic() + 30
    while True:  # until the group finds every process above
        members = [m for m in group.members() if m.state != "Z"]
        found = {command_of(m.pid) for m in members}
        # Once the escaper has ended, its child is an orphan: adopted by the group's process.
        if found >= SLEEPS and group.started["escaper"].poll() is not None:
            break
        if time.monotonic() > deadline:
            group.stop(grace_seconds=0, say=print)
            raise SystemExit(f"the group found {sorted(found)}, not all of {sorted(SLEEPS)}")
        time.sleep(0.05)
    sessions = {p.pid for p in group.started.values()}
    before = [
        {
            "command": command_of(m.pid),
            "in_session": m.session in sessions,
            "own_group": os.getpgid(m.pid) != m.session,
            "adopted": m.ppid == os.getpid() and m.pid not in sessions,
        }
        for m in members
    ]
    said: list[str] = []
    left = group.stop(grace_seconds=2, kill_wait_seconds=10, say=said.append)
    infos = [process_info(pid) for pid in all_pids()]
    return {
        "before": before,
        "left": [m.pid for m in left],
        "members_after": [m.pid for m in group.members()],
        "said": said,
        "exited": group.exited(),
        "zombies": [i.pid for i in infos if i and i.ppid == os.getpid() and i.state == "Z"],
        "marker": group.marker_value,
    }


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))))

"""`ProcessGroup.stop()` ends every process its commands started, wherever they went: one
that ignores SIGTERM (killed after the grace period), one in a process group of its own (still
in the session), one in a session of its own whose parent has ended (found by the marker in its
environment, adopted and reaped), and leaves no defunct child behind.

The group runs in a child Python (`group_stop.py`): it makes its process a child subreaper,
which the pytest process must not become.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ledger_engine.config import PROJECT_ROOT

GROUP_STOP = Path(__file__).with_name("group_stop.py")


def marked_processes(marker: str) -> list[int]:
    """Processes whose environment holds `_LEDGER_STACK=<marker>`, from /proc."""
    wanted = f"_LEDGER_STACK={marker}".encode()
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            if wanted in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                found.append(int(entry))
        except OSError:
            continue
    return found


def test_stop_ends_every_process_the_group_started_wherever_it_went(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(GROUP_STOP), str(tmp_path)],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])

    seen = {p["command"]: p for p in result["before"]}
    assert seen["sleep 601"]["in_session"] is False, "escaped: found by its marker"
    assert seen["sleep 601"]["adopted"] is True, "orphaned: its parent is now the group's"
    assert seen["sleep 602"]["in_session"] is True and seen["sleep 602"]["own_group"] is True
    assert seen["sleep 603"]["in_session"] is True

    assert result["left"] == [] and result["members_after"] == []
    assert any("SIGKILL" in line for line in result["said"]), "the stubborn one needed it"
    assert set(result["exited"]) == {"stubborn", "escaper", "parent"}
    assert result["zombies"] == [], "orphans adopted and reaped"
    assert marked_processes(result["marker"]) == []

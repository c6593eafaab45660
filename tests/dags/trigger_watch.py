"""Run by the watcher tests in a subprocess, with the test's `LEDGER_*` settings: a landing
trigger rebuilt from its serialized form, as the triggerer rebuilds it, and its `run()` driven
while a file lands in the watched folder (written under a hidden name, then renamed into
place, as the platform lands files).

    python -m tests.dags.trigger_watch CLASSPATH FOLDER NAME CONTENT_FILE

run from the repository root, as a module (it imports `tests.support`). Prints, as JSON:
`before`, what it fired for with the folder as it was (its payload, or null); `while_landing`,
whether it fired while the file had its hidden name; `fired`, the payload it fired with once
the file was renamed to NAME; `fired_again`, whether it fired again after.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from tests.support.triggerer import import_string

POLLS = 3  # looks a trigger is given to fire (or not) before the test moves on
POLL_SECONDS = 0.05
WAIT_SECONDS = 60


async def polls(trigger: Any, n: int, waiting: asyncio.Future) -> None:
    """Until the trigger has looked `n` more times, or has yielded."""
    target = trigger.polls + n
    while trigger.polls < target and not waiting.done():
        await asyncio.sleep(0.01)


async def watch(classpath: str, folder: Path, name: str, raw: bytes) -> dict[str, Any]:
    built, kwargs = import_string(classpath)(poll_seconds=POLL_SECONDS).serialize()
    trigger = import_string(built)(**kwargs)
    events = trigger.run()
    seen: dict[str, Any] = {}
    waiting = asyncio.ensure_future(anext(events))
    await asyncio.wait_for(polls(trigger, POLLS, waiting), WAIT_SECONDS)
    seen["before"] = (await waiting).payload if waiting.done() else None
    if waiting.done():
        waiting = asyncio.ensure_future(anext(events))
    hidden = folder / f".{name}.tmp"
    hidden.write_bytes(raw)
    await asyncio.wait_for(polls(trigger, POLLS, waiting), WAIT_SECONDS)
    seen["while_landing"] = waiting.done()
    hidden.replace(folder / name)
    seen["fired"] = (await asyncio.wait_for(waiting, WAIT_SECONDS)).payload
    waiting = asyncio.ensure_future(anext(events))
    await asyncio.wait_for(polls(trigger, POLLS, waiting), WAIT_SECONDS)
    seen["fired_again"] = waiting.done()
    waiting.cancel()
    return seen


def main(argv: list[str]) -> int:
    classpath, folder, name, content = argv
    seen = asyncio.run(watch(classpath, Path(folder), name, Path(content).read_bytes()))
    print(json.dumps(seen))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

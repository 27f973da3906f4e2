"""One writer per sweep: ``sweeper run`` holds ``STORE/SWEEP/.lock`` for as long as it writes the sweep.

The lock is an ``flock`` on that file, so the kernel releases it when its process ends in any way
(``kill -9`` included): a lock left by a dead run is simply free, and the next run takes it over, saying
whose it was. The file says who holds it (PID, host, since when, the command); a second run on the same
sweep stops with that in its error (:class:`SweepBusy`, exit 2) before it deletes (``--fresh``), reads or
writes anything. The file is emptied, never deleted, on release: deleting a lock file races with a run
that has it open. ``flock`` works on local file systems and on NFSv4 (as a POSIX lock); a store on a file
system without locks gets the same error as one that cannot be written.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from sweeper.errors import UserError

LOCK_NAME = ".lock"


class SweepBusy(UserError):
    """Another run holds the sweep."""


def _holder(text: str) -> dict[str, Any]:
    with contextlib.suppress(ValueError):
        found = json.loads(text)
        if isinstance(found, dict):
            return found
    return {}


def describe(holder: dict[str, Any]) -> str:
    """``pid 123 on host since 2026-...``, from what a lock file says (fields may be missing)."""
    return (
        f"pid {holder.get('pid', '?')} on {holder.get('host', '?')} since {holder.get('since', '?')}"
        f" ({holder.get('command', '?')})"
    )


def _try_lock(stream: TextIO, path: Path) -> bool:
    try:
        fcntl.flock(stream.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError as error:
        raise UserError(f"{path}: cannot lock the sweep ({error.strerror or error}); is the store's file system "
                        "one without locks?") from None  # fmt: skip
    return True


@contextlib.contextmanager
def holding(directory: Path, warn: Callable[[str], None] = print) -> Iterator[None]:
    """Hold the lock of the sweep in ``directory`` (created if need be) for the block; :class:`SweepBusy` if taken."""
    path = directory / LOCK_NAME
    try:
        directory.mkdir(parents=True, exist_ok=True)
        stream = open(path, "a+", encoding="utf-8")  # noqa: SIM115 (held open for the block)
    except OSError as error:
        raise UserError(f"{path}: cannot open the sweep's lock ({error.strerror or error})") from None
    with stream:
        if not _try_lock(stream, path):
            stream.seek(0)
            holder = _holder(stream.read())
            raise SweepBusy(
                f"sweep {directory.name} in {directory.parent} is being written by another run: "
                f"{describe(holder)}; wait for it to end, or stop it, then run again"
            )
        stream.seek(0)
        earlier = _holder(stream.read())
        if earlier:  # a run that held the lock ended without releasing it (killed): its lock is ours now
            warn(f"the run that held sweep {directory.name} ({describe(earlier)}) is gone; taking over")
        me = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": datetime.now(UTC).isoformat(timespec="seconds"),
            "command": " ".join(["sweeper", *sys.argv[1:]])[:300],
        }
        stream.seek(0)
        stream.truncate()
        stream.write(json.dumps(me))
        stream.flush()
        try:
            yield
        finally:
            stream.seek(0)
            stream.truncate()
            stream.flush()

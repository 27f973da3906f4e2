"""A real busy loop for the interference tests, started so that it is no descendant of the test process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import psutil


@contextmanager
def busy_loop_outside_this_process_tree() -> Iterator[int]:
    """A busy loop started through a shell that exits at once: no descendant of this process (the driver of an
    in-process sweep, whose whole tree counts as the launch's own), so its CPU is another's. Yields its pid."""
    spawned = subprocess.run(
        ["sh", "-c", f"{sys.executable} -c 'while True: pass' >/dev/null 2>&1 & echo $!"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    pid = int(spawned.stdout)
    try:
        assert pid not in {child.pid for child in psutil.Process().children(recursive=True)}
        yield pid
    finally:
        os.kill(pid, signal.SIGKILL)

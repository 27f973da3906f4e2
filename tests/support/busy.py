"""A real busy loop for the interference tests, started so that it is no descendant of the test process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
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


@contextmanager
def busy_loop_in_node(init_pid: int, timeout_s: float = 15.0) -> Iterator[psutil.Process]:
    """A shell busy loop in the mount, PID, network and UTS namespaces of a namespaced node whose init is
    ``init_pid`` (``nsenter -t``): one of that node's processes. Yields it (as seen here); on exit it is killed
    with its ``nsenter`` (their own session)."""
    nsenter = subprocess.Popen(
        ["nsenter", "-t", str(init_pid), "--mount", "--pid", "--net", "--uts", "--", "sh", "-c", "while :; do :; done"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + timeout_s
        while not (children := psutil.Process(nsenter.pid).children()):
            assert nsenter.poll() is None and time.monotonic() < deadline, "nsenter started no busy loop"
            time.sleep(0.02)
        yield children[0]
    finally:
        os.killpg(nsenter.pid, signal.SIGKILL)
        nsenter.wait()

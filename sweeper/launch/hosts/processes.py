"""Make sure a launch leaves no process behind: track the children it started, kill stragglers."""

from __future__ import annotations

import contextlib

import psutil

GRACE_S = 10.0
# Helpers of this Python process that may start during a launch but outlive it on purpose.
PROCESS_HELPERS = ("resource_tracker",)


def kill_tree(pid: int, grace_s: float = 2.0) -> None:
    """Terminate a process and all its descendants, then kill what is still there."""
    try:
        root = psutil.Process(pid)
        processes = [*root.children(recursive=True), root]
    except psutil.NoSuchProcess:
        return
    _terminate(processes, grace_s)


def _terminate(processes: list[psutil.Process], grace_s: float) -> None:
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.terminate()
    _, alive = psutil.wait_procs(processes, timeout=grace_s)
    for process in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    psutil.wait_procs(alive, timeout=grace_s)


class Children:
    """The descendants of this process that appeared after a point in time."""

    def __init__(self) -> None:
        self._me = psutil.Process()
        self._before = {p.pid for p in self._me.children(recursive=True)}

    def started(self) -> list[psutil.Process]:
        """Descendants started since then that are still alive."""
        found = []
        for process in self._me.children(recursive=True):
            try:
                if process.pid in self._before or process.status() == psutil.STATUS_ZOMBIE:
                    continue
                if any(helper in " ".join(process.cmdline()) for helper in PROCESS_HELPERS):
                    continue
                found.append(process)
            except psutil.NoSuchProcess:
                continue
        return found

    def reap(self, grace_s: float = GRACE_S) -> int:
        """Let the launch's processes exit on their own, then end the rest; returns how many were killed."""
        left = self.started()
        if not left:
            return 0
        _, alive = psutil.wait_procs(left, timeout=grace_s)
        if alive:
            _terminate(alive, 2.0)
        return len(alive)

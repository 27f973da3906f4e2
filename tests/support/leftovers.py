"""Find processes a launch may leave behind (checked machine-wide through the process table)."""

from __future__ import annotations

import time

import psutil

LAUNCH_PROCESS_MARKERS = (
    "org.apache.spark.executor.CoarseGrainedExecutorBackend",
    "org.apache.spark.deploy.SparkSubmit",
    "pyspark.daemon",
    "multiprocessing.spawn",
    "popen_loky_posix",
    "distributed.cli",
    "org.apache.spark.deploy.master.Master",
    "org.apache.spark.deploy.worker.Worker",
    "sweeper.launch=",
    "sweeper.yarn.MiniYarn",
)


def _ours(process: psutil.Process, me: int) -> bool:
    """Started by this test process (directly or not), or orphaned: what a sweep it ran may have left."""
    try:
        parents = process.parents()
    except psutil.NoSuchProcess:
        return False
    return process.ppid() == 1 or any(parent.pid == me for parent in parents)


def launch_processes() -> list[str]:
    """Command lines of live Spark JVMs, Dask workers and loky workers this test run started or orphaned.

    Processes of other programs on the machine (another test run, say) are not counted.
    """
    me = psutil.Process().pid
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        try:
            if process.info["status"] == psutil.STATUS_ZOMBIE or not _ours(process, me):
                continue
            cmdline = " ".join(process.info["cmdline"] or [])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if any(marker in cmdline for marker in LAUNCH_PROCESS_MARKERS):
            found.append(f"{process.pid}: {cmdline[:200]}")
    return found


def assert_no_launch_processes(wait_s: float = 15.0) -> None:
    """Fail if launch processes are still alive after ``wait_s`` (they may take a moment to exit)."""
    deadline = time.monotonic() + wait_s
    while (left := launch_processes()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not left, "processes left running:\n" + "\n".join(left)

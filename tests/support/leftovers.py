"""Find processes a launch may leave behind (checked machine-wide through the process table).

The clusters the whole test session shares (tests/conftest.py: MiniYARN, the standalone Spark master and
Dask scheduler) run all along: :func:`shared_cluster` marks their processes, and those and their
descendants are not a launch's leftovers here; each manager's own check looks inside them.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import psutil

from sweeper.launch.spark import python_daemon

# Every process this test run starts inherits this variable (tests/conftest.py sets it): an orphan that
# carries another run's value belongs to that run, so two runs on one machine do not blame each other.
RUN_VARIABLE = "SWEEPER_TEST_RUN"
# a Spark executor's Python daemon: the sweeper's, or pyspark's where a grid names it
SPARK_PYTHON_DAEMONS = (python_daemon.__name__, "pyspark.daemon")

LAUNCH_PROCESS_MARKERS = (
    "org.apache.spark.executor.CoarseGrainedExecutorBackend",
    "org.apache.spark.deploy.SparkSubmit",
    *SPARK_PYTHON_DAEMONS,
    "multiprocessing.spawn",
    "popen_loky_posix",
    "distributed.cli",
    "org.apache.spark.deploy.master.Master",
    "org.apache.spark.deploy.worker.Worker",
    "sweeper.launch=",
    "sweeper.yarn.MiniYarn",
)

_SHARED_ROOTS: set[int] = set()  # pids of the shared clusters' own processes


@contextmanager
def shared_cluster(pids: Iterable[int]) -> Iterator[None]:
    """While the block runs, processes ``pids`` and their descendants belong to a cluster the tests share."""
    roots = set(pids)
    _SHARED_ROOTS.update(roots)
    try:
        yield
    finally:
        _SHARED_ROOTS.difference_update(roots)


def in_shared_cluster(process: psutil.Process) -> bool:
    """Whether ``process`` is one of a shared cluster's processes or runs under one of them."""
    try:
        return process.pid in _SHARED_ROOTS or any(parent.pid in _SHARED_ROOTS for parent in process.parents())
    except psutil.NoSuchProcess:
        return False


def mark_this_run() -> None:
    """Give this test run's processes, and every process they start, the run's own value of RUN_VARIABLE.

    Each pytest-xdist worker is a run of its own here (the run's value and its name): the two workers of one
    ``make test`` do not blame each other's launches.
    """
    run = os.environ.setdefault(RUN_VARIABLE, uuid.uuid4().hex)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is not None and not run.endswith(f"-{worker}"):
        os.environ[RUN_VARIABLE] = f"{run}-{worker}"


def _ours(process: psutil.Process, me: int) -> bool:
    """Started by this test process (directly or not), or orphaned and not another test run's (an orphan
    without the variable, e.g. one a remote shell started, counts): what a sweep it ran may have left."""
    try:
        parents = {parent.pid for parent in process.parents()}
        if process.pid in _SHARED_ROOTS or parents & _SHARED_ROOTS:
            return False
        if me in parents:
            return True
        return process.ppid() == 1 and process.environ().get(RUN_VARIABLE) in (None, os.environ.get(RUN_VARIABLE))
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def launch_processes() -> list[str]:
    """Command lines of live Spark JVMs, Dask workers and loky workers this test run started or orphaned.

    Processes of other programs on the machine (another test run, say) and of the shared clusters are not counted.
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

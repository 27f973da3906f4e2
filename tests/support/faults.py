"""Faults injected into real sweeps: find a sweep's processes, kill them, check nothing of it survives.

Every process a test starts carries a tag in its environment (children inherit it: Dask workers,
the Spark driver JVM, executor JVMs and their Python workers), so the checks only see the test's
own processes even when other sweeps run on the same machine.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import psutil
import yaml

from tests.conftest import REPO
from tests.support.leftovers import launch_processes

TAG_VARIABLE = "SWEEPER_TEST_FAULT_TAG"
DASK_WORKER_MARKERS = ("multiprocessing.spawn", "spawn_main")
SPARK_EXECUTOR_MARKER = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
LOOPBACK = ("127.0.0.1", "::ffff:127.0.0.1")

T = TypeVar("T")


def new_tag() -> str:
    return uuid.uuid4().hex


def tagged_environment(tag: str, **variables: str) -> dict[str, str]:
    """This process's environment plus the tag (and ``variables``), for a sweep subprocess."""
    return {**os.environ, TAG_VARIABLE: tag, **variables}


def has_tag(pid: int, tag: str) -> bool:
    try:
        return psutil.Process(pid).environ().get(TAG_VARIABLE) == tag
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


def tagged_launch_processes(tag: str) -> list[str]:
    """tests.support.leftovers.launch_processes, limited to the processes carrying ``tag``."""
    return [line for line in launch_processes() if has_tag(int(line.split(":", 1)[0]), tag)]


def assert_no_tagged_processes(tag: str, wait_s: float = 30.0) -> None:
    """No Spark JVM, Dask worker or loky worker of the tagged sweep is alive (after a grace period)."""
    deadline = time.monotonic() + wait_s
    while (left := tagged_launch_processes(tag)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not left, "processes left running:\n" + "\n".join(left)


def wait_for(condition: Callable[[], T], timeout_s: float, what: str, alive: subprocess.Popen[str] | None = None) -> T:
    """Poll until ``condition()`` is truthy; fail naming ``what`` (and the sweep's output if it ended)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if alive is not None and alive.poll() is not None:
            output = alive.stdout.read() if alive.stdout else ""
            raise AssertionError(f"the sweep ended (exit {alive.returncode}) before {what}:\n{output}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.1)


def descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _with_marker(pid: int, markers: Sequence[str], name: str | None = None) -> list[psutil.Process]:
    found = []
    for process in descendants(pid):
        try:
            if process.status() == psutil.STATUS_ZOMBIE or (name and process.name() != name):
                continue
            cmdline = " ".join(process.cmdline())
        except psutil.NoSuchProcess:
            continue
        if any(marker in cmdline for marker in markers):
            found.append(process)
    return found


def dask_workers(pid: int) -> list[psutil.Process]:
    """The Dask worker processes (spawned by the nannies) under a sweep process."""
    return _with_marker(pid, DASK_WORKER_MARKERS)


def spark_executors(pid: int) -> list[psutil.Process]:
    """The executor JVMs under a sweep process (children of its driver JVM)."""
    return _with_marker(pid, (SPARK_EXECUTOR_MARKER,), name="java")


def kill(process: psutil.Process) -> None:
    """SIGKILL, as the OOM killer or a crash would."""
    os.kill(process.pid, signal.SIGKILL)


def part_files(sweep_dir: Path, launch_index: int) -> list[Path]:
    """The per-measurement files a launch has written so far (``part-RUN-LAUNCH-SEQ.parquet``)."""
    if not sweep_dir.exists():
        return []
    return sorted(p for p in sweep_dir.glob(f"part-*-{launch_index:03d}-*.parquet") if not p.name.startswith("."))


def write_grid_file(path: Path, grid: dict[str, object]) -> Path:
    path.write_text(yaml.safe_dump(grid, sort_keys=False))
    return path


def start_sweep(grid: Path, tag: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """``python -m sweeper run GRID`` in the background, tagged, output (stdout + stderr) piped."""
    return subprocess.Popen(
        [sys.executable, "-m", "sweeper", "run", str(grid), *args],
        cwd=REPO,
        env=env if env is not None else tagged_environment(tag),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def stop(process: subprocess.Popen[str]) -> None:
    """End a sweep subprocess this test started and the processes under it (cleanup after a failure)."""
    if process.poll() is None:
        for child in [*descendants(process.pid), psutil.Process(process.pid)]:
            try:
                child.kill()
            except psutil.NoSuchProcess:
                continue
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.communicate(timeout=30)


def listening_addresses(pid: int) -> list[tuple[int, str, int, str]]:
    """(pid, address, port, command) of every TCP LISTEN socket of a process and its descendants."""
    found: list[tuple[int, str, int, str]] = []
    for process in [psutil.Process(pid), *descendants(pid)]:
        try:
            connections = process.net_connections(kind="inet")
            name = " ".join(process.cmdline())[:120]
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
        found.extend(
            (process.pid, c.laddr.ip, c.laddr.port, name) for c in connections if c.status == psutil.CONN_LISTEN
        )
    return found


def cpu_seconds(process: psutil.Process, include_self: bool = True) -> float:
    """User + system CPU time of a process and its descendants (descendants only without ``include_self``)."""
    total = 0.0
    for member in [*([process] if include_self else []), *descendants(process.pid)]:
        try:
            times = member.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def wait_until_fitting(
    find: Callable[[], list[psutil.Process]],
    *,
    cpu_s: float,
    include_self: bool,
    timeout_s: float,
    alive: subprocess.Popen[str],
) -> psutil.Process:
    """The first of ``find()``'s processes that has used ``cpu_s`` CPU-seconds since it was first seen.

    A fit is the only thing that keeps a worker busy for seconds, so this is a worker in the middle
    of a fit (for a Spark executor JVM, count its Python workers only: ``include_self=False``).
    """
    first: dict[int, float] = {}

    def busy() -> psutil.Process | None:
        for process in find():
            used = cpu_seconds(process, include_self)
            if used - first.setdefault(process.pid, used) >= cpu_s:
                return process
        return None

    found = wait_for(busy, timeout_s, f"a worker {cpu_s:g} CPU-seconds into a fit", alive)
    assert found is not None
    return found

"""The machine under the bench: its facts, and CPU and memory accounting of this process tree."""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

from tests.bench.text import MIB

CPU_PARTS = ("fit workers", "driver", "JVMs", "other processes")
FOREIGN = "not this bench"  # machine-wide busy CPU minus this process tree: CI jobs, other users


def machine_facts() -> dict[str, str]:
    """What the numbers were measured on."""
    import psutil

    from sweeper.run.versions import java_version

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    facts = {
        "host": platform.node(),
        "cpu": cpu,
        "cores": f"{os.cpu_count()} ({len(os.sched_getaffinity(0))} usable)",
        "memory": f"{psutil.virtual_memory().total / 1024**3:.1f} GiB",
        "os": f"{platform.system()} {platform.release()}",
        "load average at start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "python": platform.python_version(),
        "java": java_version(),
    }
    for package in ("numpy", "scikit-learn", "joblib", "dask", "distributed", "pyspark", "joblibspark"):
        try:
            facts[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            facts[package] = "not installed"
    return facts


def machine_cores() -> int:
    """Cores of this machine."""
    return os.cpu_count() or 1


def machine_busy_s() -> float:
    """Busy CPU seconds of the whole machine so far (all cores; idle and I/O wait excluded)."""
    import psutil

    times = psutil.cpu_times()
    return float(sum(times) - times.idle - getattr(times, "iowait", 0.0))


def cpu_snapshot() -> dict[int, tuple[float, bool]]:
    """CPU seconds (user + system) so far of this process and every descendant, with whether it is a JVM."""
    import psutil

    me = psutil.Process()
    found = {}
    for process in [me, *me.children(recursive=True)]:
        try:
            times = process.cpu_times()
            found[process.pid] = (times.user + times.system, process.name() == "java")
        except psutil.Error:
            continue
    return found


def cpu_by_part(
    before: Mapping[int, tuple[float, bool]],
    after: Mapping[int, tuple[float, bool]],
    fit_pids: set[int],
    driver: int | None = None,
) -> dict[str, float]:
    """CPU seconds used between two snapshots: by the processes that ran fits, the driver, JVMs, the rest.

    >>> cpu_by_part({1: (1.0, False), 2: (0.0, True)}, {1: (1.5, False), 2: (2.0, True), 3: (3.0, False)}, {3}, 1)
    {'fit workers': 3.0, 'driver': 0.5, 'JVMs': 2.0, 'other processes': 0.0}
    """
    parts = dict.fromkeys(CPU_PARTS, 0.0)
    driver = os.getpid() if driver is None else driver
    for pid, (seconds, is_jvm) in after.items():
        used = seconds - before.get(pid, (0.0, is_jvm))[0]
        if pid in fit_pids:
            parts["fit workers"] += used
        elif pid == driver:
            parts["driver"] += used
        elif is_jvm:
            parts["JVMs"] += used
        else:
            parts["other processes"] += used
    return parts


def _rss_mib() -> float:
    import psutil

    return float(psutil.Process().memory_info().rss) / MIB

"""Is this machine busy before a sweep starts? What other processes use of its CPU, read for a moment.

``sweeper run`` (for the launches that run here) and ``sweeper check`` warn, never refuse: measurements taken
on a busy machine are disturbed (:mod:`sweeper.run.interference`) and taken again. The 1-minute load average
decides first, at no cost; only above it are the processes sampled (:data:`SAMPLE_S`), and the busiest named.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

SAMPLE_S = 0.5  # how long the processes are watched when the load average says the machine may be busy
NAMED = 3  # the busiest processes a warning names


@dataclass(frozen=True)
class Busiest:
    """A process outside this one's tree and its CPU over the sample, in cores (1.0: one core's worth)."""

    name: str
    pid: int
    cores: float


@dataclass(frozen=True)
class MachineLoad:
    """Other processes' CPU over the sample, in cores, of this machine's ``cores``, the busiest first."""

    others_cores: float
    cores: int
    busiest: tuple[Busiest, ...]

    def warning(self, limit: float) -> str:
        """What a user is told: how busy, by what, and what it means for the measurements."""
        named = ", ".join(f"{p.name} pid {p.pid} {p.cores * 100:.0f} %" for p in self.busiest)
        return (
            f"this machine is busy: others use {self.others_cores:.1f} of its {self.cores} cores"
            + (f" ({named})" if named else "")
            + f"; measurements above workload.interference_limit {limit:g} are disturbed: taken again, left out"
        )


def busy_machine(limit: float, sample_s: float = SAMPLE_S) -> MachineLoad | None:
    """This machine's load when other processes use more than ``limit`` of its cores (None when quieter)."""
    cores = os.cpu_count() or 1
    if os.getloadavg()[0] <= limit * cores:
        return None
    used = others_cpu(sample_s)
    others_cores = sum(p.cores for p in used)
    if others_cores <= limit * cores:
        return None
    return MachineLoad(others_cores, cores, tuple(sorted(used, key=lambda p: -p.cores)[:NAMED]))


def others_cpu(sample_s: float) -> list[Busiest]:
    """Every process outside this one's tree that used CPU during ``sample_s`` seconds, with how much."""
    import psutil

    mine = {os.getpid(), *(child.pid for child in psutil.Process().children(recursive=True))}
    watched = [p for p in psutil.process_iter(["name"]) if p.pid not in mine]
    before = {p.pid: _cpu_s(p) for p in watched}
    time.sleep(sample_s)
    used = []
    for process in watched:
        start, end = before[process.pid], _cpu_s(process)
        if start is not None and end is not None and end > start:
            used.append(Busiest(process.info["name"] or "?", process.pid, (end - start) / sample_s))
    return used


def _cpu_s(process: object) -> float | None:
    """A process's user + system CPU seconds so far (None when it is gone or cannot be read)."""
    import psutil

    assert isinstance(process, psutil.Process)
    try:
        times = process.cpu_times()
    except psutil.Error:
        return None
    return float(times.user + times.system)

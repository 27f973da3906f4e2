"""Is this machine busy before a sweep starts? What other processes use of its CPU, read for a moment.

``sweeper run`` (for the launches that run here) and ``sweeper check`` warn, never refuse: measurements taken
on a busy machine are disturbed (:mod:`sweeper.run.interference`) and taken again. The 1-minute load average
decides first, at no cost; only above it are the processes sampled (:data:`SAMPLE_S` at least: a run samples
while it loads its data), and the busiest named.
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
    """Other processes' CPU over the sample, in cores, of this machine's ``cores``; each process that used some,
    the busiest first."""

    others_cores: float
    cores: int
    busiest: tuple[Busiest, ...]

    def warning(self, limit: float) -> str:
        """What a user is told: how busy, by what, and what it means for the measurements."""
        named = ", ".join(f"{p.name} pid {p.pid} {p.cores * 100:.0f} %" for p in self.busiest[:NAMED])
        return (
            f"this machine is busy: others use {self.others_cores:.1f} of its {self.cores} cores"
            + (f" ({named})" if named else "")
            + f"; measurements above workload.interference_limit {limit:g} are disturbed: taken again, left out"
        )


class LoadSample:
    """Other processes' CPU from :meth:`start` to :meth:`finish`: a run samples while it loads its data."""

    def __init__(self, limit: float) -> None:
        import psutil

        self.limit, self.cores = limit, os.cpu_count() or 1
        mine = {os.getpid(), *(child.pid for child in psutil.Process().children(recursive=True))}
        self.watched = [p for p in psutil.process_iter(["name"]) if p.pid not in mine]
        self.before = {p.pid: _cpu_s(p) for p in self.watched}
        self.started_s = time.monotonic()

    @classmethod
    def start(cls, limit: float) -> LoadSample | None:
        """A sample begun now, or None when the 1-minute load average is under ``limit`` of the cores already."""
        return cls(limit) if os.getloadavg()[0] > limit * (os.cpu_count() or 1) else None

    def finish(self, min_s: float = SAMPLE_S) -> MachineLoad | None:
        """The machine's load when others used more than the limit of its cores (after ``min_s`` at least)."""
        time.sleep(max(min_s - (time.monotonic() - self.started_s), 0.0))
        span_s = time.monotonic() - self.started_s
        used = []
        for process in self.watched:
            start, end = self.before[process.pid], _cpu_s(process)
            if start is not None and end is not None and end > start:
                used.append(Busiest(process.info["name"] or "?", process.pid, (end - start) / span_s))
        others_cores = sum(p.cores for p in used)
        if others_cores <= self.limit * self.cores:
            return None
        return MachineLoad(others_cores, self.cores, tuple(sorted(used, key=lambda p: -p.cores)))


def busy_machine(limit: float, sample_s: float = SAMPLE_S) -> MachineLoad | None:
    """This machine's load when other processes use more than ``limit`` of its cores (None when quieter)."""
    sample = LoadSample.start(limit)
    return sample.finish(sample_s) if sample is not None else None


def others_cpu(sample_s: float) -> list[Busiest]:
    """Every process outside this one's tree that used CPU during ``sample_s`` seconds, with how much."""
    found = LoadSample(limit=-1.0).finish(sample_s)
    return list(found.busiest) if found is not None else []


def _cpu_s(process: object) -> float | None:
    """A process's user + system CPU seconds so far (None when it is gone or cannot be read)."""
    import psutil

    assert isinstance(process, psutil.Process)
    try:
        times = process.cpu_times()
    except psutil.Error:
        return None
    return float(times.user + times.system)

"""What every engine provides: a started cluster as a :class:`Session` that runs batches of fits."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from sweeper.config.grid import START_TIMEOUT_S
from sweeper.launch.options import LocalOptions, ManagerOptions
from sweeper.shapes import shape_text_mib
from sweeper.units import MIB_PER_GIB
from sweeper.workload.data import Data
from sweeper.workload.fit import FitResult
from sweeper.workload.tasks import FitTask


class LaunchError(RuntimeError):
    """A launch could not start or did not get what was planned; recorded as a failed row."""


@dataclass(frozen=True)
class LaunchContext:
    """What a launch needs besides its shape: where to put scratch files, the fit environment, its manager's options."""

    run_dir: Path
    environment: dict[str, str]
    threads_per_fit: int
    start_timeout_s: float = START_TIMEOUT_S
    spark_conf: dict[str, str] = field(default_factory=dict)  # the grid's extra Spark properties
    options: ManagerOptions = field(default_factory=LocalOptions)  # the launch's manager's (a dry run's: local)
    log_dir: Path | None = None  # where each launch's processes write their standard error (kept after the run)


@dataclass(frozen=True)
class Granted:
    """What the cluster actually gave, to compare with the plan."""

    executors: int
    cores_per_executor: int
    executor_memory_mib: int

    @property
    def executor_memory_gib(self) -> float:
        return self.executor_memory_mib / MIB_PER_GIB


class Session(Protocol):
    """A started launch."""

    granted: Granted
    # seconds of the start spent putting files on the cluster's file system (0: nothing staged, e.g. reused);
    # None: not known
    staging_s: float | None

    def run_batch(self, tasks: list[FitTask], data: Data) -> list[FitResult]:
        """Run the fits in parallel on the launch; an exception of a fit propagates unchanged."""
        ...

    def jvm_peak_heap_gib(self) -> float | None:
        """Spark: the largest executor's peak JVM heap so far, from Spark's executor metrics; other engines: None."""
        ...

    def abort(self, restart: bool = True) -> None:
        """Stop a running batch at once (timeout, Ctrl-C): kill what runs fits.

        Where the engine can start them again (the baseline, Dask's nannies, Spark's workers), the next
        batch runs on fresh workers; Dask's abort returns only once they are all back, unless ``restart``
        is false (Ctrl-C: the launch is torn down next, and the same signal may have ended the nannies).
        Dask on YARN kills the application: the next batch fails, and the runner starts the launch again.
        """
        ...


@runtime_checkable
class SavesLogs(Protocol):
    """A session whose processes keep logs elsewhere (YARN's containers): saved beside the launch's log on failure."""

    def save_logs(self) -> Path | None:
        """Write the logs of the launch's remote processes to a file of the run's; the file, or None (none found)."""
        ...


def check_granted(planned: Granted, granted: Granted, engine: str) -> None:
    """Fail the launch when the cluster gave something other than the plan."""
    if granted != planned:
        raise LaunchError(f"{engine} granted {_shape(granted)}, planned {_shape(planned)}")


def _shape(granted: Granted) -> str:
    return shape_text_mib(granted.executors, granted.cores_per_executor, granted.executor_memory_mib)

"""Engine ``local``: the single-thread baseline, plain scikit-learn with no cluster.

The batch runs sequentially in one fresh worker process that has the same controlled
environment as every engine's workers (not in the sweeper's own process, which has Spark and
Dask loaded); McSherry's COST compares the engines against it.
"""

from __future__ import annotations

from typing import Any

from joblib.externals.loky import get_reusable_executor

from sweeper.launch.base import Granted, LaunchContext
from sweeper.launch.lifecycle import ManagerBackend, Teardown
from sweeper.names import BASELINE_ENGINE
from sweeper.workload.data import Data
from sweeper.workload.fit import FitResult, run_fits
from sweeper.workload.tasks import FitTask


class BaselineSession:
    """One worker process, one fit at a time."""

    staging_s: float | None = 0.0

    def __init__(self, context: LaunchContext) -> None:
        self.granted = Granted(executors=1, cores_per_executor=1, executor_memory_mib=0)
        self._environment = context.environment
        self._executor = self._new_executor()

    def _new_executor(self) -> Any:
        return get_reusable_executor(max_workers=1, env=self._environment, reuse=False)

    def run_batch(self, tasks: list[FitTask], data: Data) -> list[FitResult]:
        return self._executor.submit(run_fits, tasks, data).result()

    def jvm_peak_heap_gib(self) -> float | None:
        return None  # no JVM

    def abort(self, restart: bool = True) -> None:
        """Kill the worker process; a fresh one runs the next batch."""
        self._executor.shutdown(wait=True, kill_workers=True)
        self._executor = self._new_executor()

    def close(self) -> None:
        self._executor.shutdown(wait=True, kill_workers=True)


class Baseline(ManagerBackend):
    """No cluster: one worker process of this machine."""

    engine = BASELINE_ENGINE

    def start(self, teardown: Teardown) -> None:
        self.baseline = BaselineSession(self.context)
        teardown.add(self.baseline.close)

    def granted(self) -> Granted:
        return self.baseline.granted

    def session(self, granted: Granted, n_jobs: int) -> BaselineSession:
        return self.baseline

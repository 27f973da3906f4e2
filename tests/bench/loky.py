"""The peer to beat: plain ``joblib.Parallel`` with loky, started, probed and shut down."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from sweeper.workload.data import Data
from sweeper.workload.fit import FitResult, run_fit
from sweeper.workload.tasks import FitTask
from tests.bench.engine_run import EngineRun


class LokySession:
    """The peer: ``joblib.Parallel(n_jobs)`` with joblib's default backend, loky."""

    def __init__(self, n_jobs: int) -> None:
        self.n_jobs = n_jobs

    def run_batch(self, tasks: list[FitTask], data: Data) -> list[FitResult]:
        import joblib

        results: list[FitResult] = joblib.Parallel(n_jobs=self.n_jobs)(
            joblib.delayed(run_fit)(task, data) for task in tasks
        )
        return results


def _loky_probe(data: Data) -> tuple[int, bool]:
    """Inside a loky worker: its pid, and whether the training array arrived memory-mapped."""
    import numpy as np

    return os.getpid(), isinstance(data.X_train, np.memmap)


@contextmanager
def loky_started(n_jobs: int, data: Data, run: EngineRun) -> Iterator[LokySession]:
    """Spawn loky's workers (timed as its start); shut them down at the end."""
    import joblib

    started = time.perf_counter()
    probes = joblib.Parallel(n_jobs=n_jobs)(joblib.delayed(os.getpid)() for _ in range(n_jobs))
    run.start_s = time.perf_counter() - started
    memmapped = joblib.Parallel(n_jobs=n_jobs)(joblib.delayed(_loky_probe)(data) for _ in range(n_jobs))
    run.shipping["memmapped"] = all(flag for _, flag in memmapped)
    run.shipping["startup_pids"] = sorted(set(probes))
    try:
        yield LokySession(n_jobs)
    finally:
        _shutdown_loky()


def _shutdown_loky() -> None:
    from joblib.externals.loky import reusable_executor

    executor = reusable_executor._executor
    if executor is not None:
        executor.shutdown(wait=True, kill_workers=True)

"""Running a batch of fits through a joblib backend (shared by the Dask, Spark and Ray engines)."""

from __future__ import annotations

import itertools
import warnings
from typing import Any

import joblib

from sweeper.workload.data import Data
from sweeper.workload.fit import FitResult, SharedData, run_fits
from sweeper.workload.tasks import FitTask


def dispatch_groups(tasks: list[FitTask], slots: int) -> list[list[FitTask]]:
    """The batch's fits as joblib dispatches: one a slot when the fits are alike, else one a fit.

    Every dispatch costs an engine a task of its own (on Spark a whole job, 70-145 ms on a warm
    executor while the slot idles; BENCHMARKS.md). Fits of one configuration (replicas, folds) take the same
    time, so handing each slot its share at once ends when one fit a dispatch would; a search's
    parameter combinations differ in cost and go one by one, so a free slot takes the next. Shares
    differ by one fit at most, in the batch's order.

    >>> from sweeper.workload.tasks import FitTask
    >>> alike = [FitTask((("alpha", 1.0),), 5, seed, False, 1) for seed in range(7)]
    >>> [[task.seed for task in group] for group in dispatch_groups(alike, 3)]
    [[0, 1, 2], [3, 4], [5, 6]]
    >>> search = [FitTask((("alpha", a),), 5, 0, False, 1) for a in (1.0, 2.0, 3.0)]
    >>> len(dispatch_groups(alike, 8)), len(dispatch_groups(search, 2))
    (7, 3)
    """
    alike = len({(task.params, task.epochs, task.estimator) for task in tasks}) == 1
    if not alike:
        return [[task] for task in tasks]
    groups = max(1, min(slots, len(tasks)))
    size, extra = divmod(len(tasks), groups)
    bounds = [i * size + min(i, extra) for i in range(groups + 1)]
    return [tasks[start:end] for start, end in itertools.pairwise(bounds)]


def run_on_backend(
    backend: str, slots: int, tasks: list[FitTask], data: Data | SharedData | Any, *, n_jobs: int | None = None
) -> list[FitResult]:
    """One joblib ``Parallel`` call over the batch on a registered backend with ``slots`` fits at a time.

    ``data`` is passed to every fit as it is: engines pass a handle to data they shipped once per launch.
    ``n_jobs`` (default ``slots``) is what joblib is told, where an engine must tell it more.
    """
    with joblib.parallel_config(backend=backend, n_jobs=n_jobs or slots), warnings.catch_warnings():
        # pyspark warns on every joblibspark job that it was not given a session to inherit tags from
        warnings.filterwarnings("ignore", message="Spark session is not provided")
        # a one-slot Spark launch asks for n_jobs=2 so that joblib does not run the batch in the driver
        warnings.filterwarnings("ignore", message=r"User-specified n_jobs \(2\) is greater than")
        # one group a dispatch (joblib's own batching would regroup a fixed batch_size near the batch's end)
        dispatches = (joblib.delayed(run_fits)(group, data) for group in dispatch_groups(tasks, slots))
        groups: list[list[FitResult]] = joblib.Parallel(batch_size=1)(dispatches)
    return [result for group in groups for result in group]

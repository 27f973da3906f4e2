"""Running a batch of fits through a joblib backend (shared by the Dask and Spark engines)."""

from __future__ import annotations

import warnings
from typing import Any

import joblib

from sweeper.workload.data import Data
from sweeper.workload.fit import FitResult, SharedData, run_fit
from sweeper.workload.tasks import FitTask


def run_on_backend(backend: str, n_jobs: int, tasks: list[FitTask], data: Data | SharedData | Any) -> list[FitResult]:
    """One joblib ``Parallel`` call over the batch on a registered backend.

    ``data`` is passed to every fit as it is: engines pass a handle to data they shipped once per launch.
    """
    with joblib.parallel_config(backend=backend, n_jobs=n_jobs), warnings.catch_warnings():
        # pyspark warns on every joblibspark job that it was not given a session to inherit tags from
        warnings.filterwarnings("ignore", message="Spark session is not provided")
        # a one-slot Spark launch asks for n_jobs=2 so that joblib does not run the batch in the driver
        warnings.filterwarnings("ignore", message=r"User-specified n_jobs \(2\) is greater than")
        results: list[FitResult] = joblib.Parallel()(joblib.delayed(run_fit)(task, data) for task in tasks)
    return results

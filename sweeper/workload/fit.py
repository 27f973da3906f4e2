"""What a worker runs: one fit of the grid's estimator, or one data-parallel training, reported as a
:class:`FitResult`.

Every fit is scored on the held-out test set by the grid's scorer (the ``accuracy`` column); a data-parallel
training is scored on its averaged weights.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from sweeper.workload import averaging
from sweeper.workload.data import Data
from sweeper.workload.environment import observed
from sweeper.workload.estimators import build, iterations_run, score
from sweeper.workload.tasks import FitTask, one_model
from sweeper.workload.usage import Usage, measured


class SharedData(Protocol):
    """Training data an engine shipped to its workers once per launch (a broadcast, a scattered future)."""

    def resolve(self) -> Data:
        """The data, read from the worker's copy."""
        ...


@dataclass(frozen=True)
class FitResult:
    """What one fit reports back to the driver."""

    fit_s: float
    accuracy: float
    epochs_run: int
    converged: bool
    pid: int
    environment: dict[str, str]
    # data-parallel only: rounds of parameter averaging, mean seconds per round, weights moved per round
    rounds: int | None = None
    round_s_mean: float | None = None
    comm_bytes_per_round: int | None = None
    shards: int | None = None
    usage: Usage | None = None  # CPU and memory of the fit's thread, process and (Spark) executor JVM

    @classmethod
    def of_this_process(
        cls, task: FitTask, fit_s: float, accuracy: float, epochs_run: int, usage: Usage | None = None
    ) -> FitResult:
        """A fit of ``task`` that ran here: converged when it stopped before the epochs it was given."""
        return cls(fit_s, accuracy, epochs_run, epochs_run < task.epochs, os.getpid(), observed(), usage=usage)


def run_fit(task: FitTask, data: Data | SharedData) -> FitResult:
    """Train and score one fit of the grid's estimator; runs inside whatever worker the engine chose.

    A data-parallel task here is the baseline's: its one model trained with P = 1 in this process."""
    if not isinstance(data, Data):
        data = data.resolve()
    if one_model([task]):
        return _train_in_process_result(task, data)
    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    model = build(task.estimator, dict(task.params), task.epochs, task.seed, exact_epochs=task.exact_epochs)
    X, y = data.X_train, data.y_train
    if task.train_rows is not None:
        X, y = X[task.train_rows], y[task.train_rows]
    # Process-wide on purpose: catch_warnings is not thread-safe, and a Dask worker runs fits in threads.
    # Stopping at max_iter is expected here and recorded as converged=False.
    warnings.simplefilter("ignore", ConvergenceWarning)
    with threadpool_limits(limits=task.threads_per_fit), measured() as probe:
        started = time.perf_counter()
        model.fit(X, y)
        fit_s = time.perf_counter() - started
        accuracy = score(task.estimator, model, data)
    return FitResult.of_this_process(task, fit_s, accuracy, iterations_run(model, task.epochs), probe.usage)


def run_fits(tasks: list[FitTask], data: Data | SharedData) -> list[FitResult]:
    """Several fits one after the other in this worker (one engine task for all of them)."""
    return [run_fit(task, data) for task in tasks]


def fit_result(task: FitTask, data: Data, train_once: Callable[[dict[str, Any]], averaging.Outcome]) -> FitResult:
    """Time one data-parallel training and score its averaged weights."""
    from threadpoolctl import threadpool_limits

    params = dict(task.params)
    started = time.perf_counter()
    with threadpool_limits(limits=task.threads_per_fit):
        outcome = train_once(params)
    fit_s = time.perf_counter() - started
    rounds = len(outcome.round_s)
    return FitResult(
        fit_s=fit_s,
        accuracy=averaging.accuracy(outcome.weights, params, data, task.seed),
        epochs_run=rounds * task.local_epochs,
        converged=False,
        pid=os.getpid(),
        environment=observed(),
        rounds=rounds,
        round_s_mean=sum(outcome.round_s) / rounds,
        comm_bytes_per_round=outcome.comm_bytes_per_round,
        shards=outcome.shards,
    )


def _train_in_process_result(task: FitTask, data: Data) -> FitResult:
    """The baseline's data-parallel measurement: P = 1, in the calling process."""
    return fit_result(
        task, data, lambda params: averaging.train_in_process(data, params, task.epochs, task.local_epochs, task.seed)
    )

"""The workload: a batch of independent MLPClassifier fits, and the function each worker runs.

``MLPClassifier`` has no ``n_jobs``: the parallel job of a launch is a batch of independent fits
dispatched through joblib on the launch's backend. Modes: ``replicas`` (one fit per seed),
``cv`` (one per fold), ``search`` (one per parameter combination and fold, as GridSearchCV does).
Every fit is scored on the held-out test set.
"""

from __future__ import annotations

import itertools
import os
import time
import warnings
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from sweeper.workload.data import Data
from sweeper.workload.environment import observed


@dataclass(frozen=True)
class FitTask:
    """One fit of a batch: its parameters, epochs, seed and (for cv/search) training rows."""

    params: tuple[tuple[str, Any], ...]
    epochs: int
    seed: int
    exact_epochs: bool
    threads_per_fit: int
    train_rows: np.ndarray | None = None
    mode: str = "replicas"
    local_epochs: int = 1
    shards: int = 1


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


def make_batch(
    mode: str,
    params: dict[str, Any],
    epochs: int,
    trial: int,
    n_fits: int,
    *,
    n_train: int,
    labels: np.ndarray,
    folds: int,
    param_grid: tuple[tuple[str, tuple[Any, ...]], ...],
    seed: int,
    exact_epochs: bool,
    threads_per_fit: int,
    local_epochs: int = 1,
    shards: int = 1,
) -> list[FitTask]:
    """The fits of one measurement. Seeds differ per trial so trials are independent samples.

    >>> import numpy as np
    >>> batch = make_batch("replicas", {}, 5, trial=1, n_fits=3, n_train=10, labels=np.zeros(10),
    ...                    folds=2, param_grid=(), seed=0, exact_epochs=False, threads_per_fit=1)
    >>> [task.seed for task in batch]
    [1000, 1001, 1002]
    """
    base_seed = seed + 1000 * trial
    common = {"epochs": epochs, "exact_epochs": exact_epochs, "threads_per_fit": threads_per_fit}
    if mode == "data-parallel":  # one model, trained across the launch's shards
        return [
            FitTask(
                params=tuple(params.items()),
                seed=base_seed,
                mode=mode,
                local_epochs=local_epochs,
                shards=shards,
                **common,  # type: ignore[arg-type]
            )
        ]
    if mode == "replicas":
        return [
            FitTask(params=tuple(params.items()), seed=base_seed + i, **common)  # type: ignore[arg-type]
            for i in range(n_fits)
        ]
    from sklearn.model_selection import StratifiedKFold

    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=base_seed)
    fold_rows = [train for train, _ in splitter.split(np.zeros(n_train), labels)]
    combos: list[dict[str, Any]] = [{}]
    if mode == "search":
        names = [name for name, _ in param_grid]
        combos = [dict(zip(names, values, strict=True)) for values in itertools.product(*(v for _, v in param_grid))]
    return [
        FitTask(
            params=tuple({**params, **combo}.items()),
            seed=base_seed,
            train_rows=rows,
            **common,  # type: ignore[arg-type]
        )
        for combo in combos
        for rows in fold_rows
    ]


def run_fit(task: FitTask, data: Data | SharedData) -> FitResult:
    """Train and score one MLPClassifier; runs inside whatever worker the engine chose."""
    if not isinstance(data, Data):
        data = data.resolve()
    if task.mode == "data-parallel":
        from sweeper.workload.data_parallel import train_in_process_result

        return train_in_process_result(task, data)
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier
    from threadpoolctl import threadpool_limits

    params = dict(task.params)
    if "hidden_layer_sizes" in params:
        params["hidden_layer_sizes"] = tuple(params["hidden_layer_sizes"])
    if task.exact_epochs:
        # Stopping needs n_iter_no_change epochs without improvement: never within max_iter.
        params.update(n_iter_no_change=task.epochs + 1, early_stopping=False)
    model = MLPClassifier(max_iter=task.epochs, random_state=task.seed, **params)
    X, y = data.X_train, data.y_train
    if task.train_rows is not None:
        X, y = X[task.train_rows], y[task.train_rows]
    # Process-wide on purpose: catch_warnings is not thread-safe, and a Dask worker runs fits in threads.
    # Stopping at max_iter is expected here and recorded as converged=False.
    warnings.simplefilter("ignore", ConvergenceWarning)
    with threadpool_limits(limits=task.threads_per_fit):
        started = time.perf_counter()
        model.fit(X, y)
        fit_s = time.perf_counter() - started
        accuracy = float(model.score(data.X_test, data.y_test))
    epochs_run = int(model.n_iter_)
    return FitResult(
        fit_s=fit_s,
        accuracy=accuracy,
        epochs_run=epochs_run,
        converged=epochs_run < task.epochs,
        pid=os.getpid(),
        environment=observed(),
    )

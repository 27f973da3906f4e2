"""The fits of one measurement, and whether they train one model across the launch.

A fit runs one job (``MLPClassifier`` has no ``n_jobs``; other estimators' is set to 1): the parallel job of a
launch is a batch of independent fits dispatched through joblib on the launch's backend. Modes: ``replicas``
(one fit per seed), ``cv`` (one per fold), ``search`` (one per parameter combination and fold, as GridSearchCV does),
``data-parallel`` (ONE model trained across the launch's shards by parameter averaging).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from sweeper.config import modes
from sweeper.config.grid import CLASSIFIER, DEFAULT_ESTIMATOR, Estimator
from sweeper.names import REPLICAS


@dataclass(frozen=True)
class FitTask:
    """One fit of a batch: its parameters, epochs, seed and (for cv/search) training rows."""

    params: tuple[tuple[str, Any], ...]
    epochs: int
    seed: int
    exact_epochs: bool
    threads_per_fit: int
    train_rows: np.ndarray | None = None
    mode: str = REPLICAS
    local_epochs: int = 1
    shards: int = 1
    estimator: Estimator = DEFAULT_ESTIMATOR  # epochs: the value of its work parameter


def one_model(tasks: Sequence[FitTask]) -> bool:
    """Whether the batch trains one model across the launch (data-parallel) instead of independent fits.

    >>> one_model([FitTask((), 5, 0, False, 1, mode="data-parallel")]), one_model([FitTask((), 5, 0, False, 1)])
    (True, False)
    """
    return bool(tasks) and modes.mode(tasks[0].mode).one_model


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
    estimator: Estimator = DEFAULT_ESTIMATOR,
) -> list[FitTask]:
    """The fits of one measurement. Seeds differ per trial so trials are independent samples. Folds are
    stratified by class for a classifier.

    >>> import numpy as np
    >>> batch = make_batch("replicas", {}, 5, trial=1, n_fits=3, n_train=10, labels=np.zeros(10),
    ...                    folds=2, param_grid=(), seed=0, exact_epochs=False, threads_per_fit=1)
    >>> [task.seed for task in batch]
    [1000, 1001, 1002]
    """
    base_seed = seed + 1000 * trial
    batch = modes.mode(mode)
    first = FitTask(
        tuple(params.items()), epochs, base_seed, exact_epochs, threads_per_fit, mode=mode, estimator=estimator
    )
    if batch.one_model:  # one model, trained across the launch's shards
        return [replace(first, local_epochs=local_epochs, shards=shards)]
    fold_rows = _fold_rows(estimator, folds, n_train, labels, base_seed) if batch.folds else [None]
    combos = _combinations(param_grid) if batch.combinations else [{}]
    return [
        replace(first, params=tuple({**params, **combo}.items()), seed=base_seed + replica, train_rows=rows)
        for combo in combos
        for rows in fold_rows
        for replica in range(n_fits if batch.replicas else 1)
    ]


def _fold_rows(estimator: Estimator, folds: int, n_train: int, labels: np.ndarray, seed: int) -> list[np.ndarray]:
    """Each fold's training rows: stratified by class for a classifier, plain folds for a regressor."""
    from sklearn.model_selection import KFold, StratifiedKFold

    folding = StratifiedKFold if estimator.kind == CLASSIFIER else KFold
    splitter = folding(n_splits=folds, shuffle=True, random_state=seed)
    return [train for train, _ in splitter.split(np.zeros(n_train), labels)]


def _combinations(param_grid: tuple[tuple[str, tuple[Any, ...]], ...]) -> list[dict[str, Any]]:
    """Every combination of a ``search`` grid's values, as ``GridSearchCV`` walks them."""
    names = [name for name, _ in param_grid]
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*(v for _, v in param_grid))]

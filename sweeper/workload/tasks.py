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
from sweeper.config.grid import CLASSIFIER, DEFAULT_ESTIMATOR, Estimator, Workload
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


@dataclass(frozen=True)
class Recipe:
    """What every batch of a workload shares (the grid's ``workload`` keys of the same names, whose defaults the
    grid's schema states)."""

    seed: int
    exact_epochs: bool
    threads_per_fit: int
    folds: int
    param_grid: tuple[tuple[str, tuple[Any, ...]], ...]
    local_epochs: int
    estimator: Estimator

    @classmethod
    def of(cls, workload: Workload) -> Recipe:
        return cls(
            workload.seed, workload.exact_epochs, workload.threads_per_fit, workload.folds, workload.param_grid,
            workload.local_epochs, workload.estimator,
        )  # fmt: skip


def make_batch(
    recipe: Recipe,
    mode: str,
    params: dict[str, Any],
    epochs: int,
    trial: int,
    n_fits: int,
    *,
    labels: np.ndarray,
    shards: int = 1,
) -> list[FitTask]:
    """The fits of one measurement of ``n_fits`` (replicas) on training rows of ``labels``. Seeds differ per trial
    so trials are independent samples. Folds are stratified by class for a classifier.

    >>> import numpy as np
    >>> from sweeper.config.grid import DEFAULT_ESTIMATOR
    >>> recipe = Recipe(0, False, 1, 3, (), 1, DEFAULT_ESTIMATOR)
    >>> batch = make_batch(recipe, "replicas", {}, 5, trial=1, n_fits=3, labels=np.zeros(10))
    >>> [task.seed for task in batch]
    [1000, 1001, 1002]
    """
    base_seed = recipe.seed + 1000 * trial
    batch = modes.mode(mode)
    estimator = recipe.estimator
    first = FitTask(
        tuple(params.items()), epochs, base_seed, recipe.exact_epochs, recipe.threads_per_fit, mode=mode,
        estimator=estimator,
    )  # fmt: skip
    if batch.one_model:  # one model, trained across the launch's shards
        return [replace(first, local_epochs=recipe.local_epochs, shards=shards)]
    fold_rows = _fold_rows(estimator, recipe.folds, labels, base_seed) if batch.folds else [None]
    combos = _combinations(recipe.param_grid) if batch.combinations else [{}]
    return [
        replace(first, params=tuple({**params, **combo}.items()), seed=base_seed + replica, train_rows=rows)
        for combo in combos
        for rows in fold_rows
        for replica in range(n_fits if batch.replicas else 1)
    ]


def _fold_rows(estimator: Estimator, folds: int, labels: np.ndarray, seed: int) -> list[np.ndarray]:
    """Each fold's training rows: stratified by class for a classifier, plain folds for a regressor."""
    from sklearn.model_selection import KFold, StratifiedKFold

    folding = StratifiedKFold if estimator.kind == CLASSIFIER else KFold
    splitter = folding(n_splits=folds, shuffle=True, random_state=seed)
    return [train for train, _ in splitter.split(np.zeros(len(labels)), labels)]


def _combinations(param_grid: tuple[tuple[str, tuple[Any, ...]], ...]) -> list[dict[str, Any]]:
    """Every combination of a ``search`` grid's values, as ``GridSearchCV`` walks them."""
    names = [name for name, _ in param_grid]
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*(v for _, v in param_grid))]

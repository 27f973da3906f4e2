"""The workload: batches per mode, and one fit as workers run it."""

from __future__ import annotations

import numpy as np

from sweeper.workload.fit import run_fit
from sweeper.workload.tasks import FitTask, make_batch
from tests.support.batches import recipe_with, replicas


def batch(mode: str) -> list[FitTask]:
    recipe = recipe_with(folds=3, param_grid=(("alpha", (0.1, 0.01)),))
    return make_batch(recipe, mode, {"hidden_layer_sizes": (8,)}, 5, 2, 4, labels=np.arange(100) % 10)


def test_replicas_are_one_fit_per_seed_and_trials_get_their_own_seeds() -> None:
    tasks = batch("replicas")
    assert [t.seed for t in tasks] == [2000, 2001, 2002, 2003]
    assert all(t.train_rows is None for t in tasks)


def test_cv_is_one_fit_per_fold_on_disjoint_held_out_rows() -> None:
    tasks = batch("cv")
    assert len(tasks) == 3
    held_out = [set(range(100)) - set(t.train_rows.tolist()) for t in tasks]  # type: ignore[union-attr]
    assert set().union(*held_out) == set(range(100))
    assert sum(len(h) for h in held_out) == 100


def test_search_is_every_combination_times_every_fold() -> None:
    tasks = batch("search")
    assert len(tasks) == 6
    assert sorted({dict(t.params)["alpha"] for t in tasks}) == [0.01, 0.1]


def test_a_fit_reports_time_accuracy_epochs_and_its_environment(digits) -> None:  # type: ignore[no-untyped-def]
    task = replicas(digits, 1, epochs=60, hidden=(32,))[0]
    result = run_fit(task, digits)
    assert result.fit_s > 0
    assert 0.85 < result.accuracy <= 1.0
    assert 1 <= result.epochs_run <= 60
    assert result.converged == (result.epochs_run < 60)


def test_exact_epochs_runs_every_epoch_despite_tolerance(digits) -> None:  # type: ignore[no-untyped-def]
    params = {"hidden_layer_sizes": (16,), "tol": 0.5}  # a tolerance this loose stops after a few epochs
    early = run_fit(make_batch(recipe_with(), "replicas", params, 40, 0, 1, labels=digits.y_train)[0], digits)
    exact = run_fit(
        make_batch(recipe_with(exact_epochs=True), "replicas", params, 40, 0, 1, labels=digits.y_train)[0], digits
    )
    assert early.epochs_run < 40 and early.converged
    assert exact.epochs_run == 40 and not exact.converged

"""A fit's model: the grid's estimator (a class, or a pipeline of them) built with the task's parameters, its
work-axis value and its seed, and the held-out score it is judged by.

The names were checked before any launch (:mod:`sweeper.config.estimator`); a worker imports them again with
importlib (the module, then the class).
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from sweeper.config.grid import MLP_WORK_PARAMETER, Estimator
from sweeper.workload.data import Data

FIT_JOBS = 1  # every step's n_jobs: the engines are the parallelism


def _estimator_class(name: str) -> type:
    """The class of a dotted name: its module imported, then the attribute read."""
    module_name, _, attribute = name.rpartition(".")
    found = getattr(importlib.import_module(module_name), attribute)
    if not isinstance(found, type):
        raise TypeError(f"{name} is not a class")
    return found


def build(estimator: Estimator, params: dict[str, Any], work: int, seed: int, *, exact_epochs: bool) -> Any:
    """The model one fit trains: ``params`` set, the work axis at ``work``, every step's ``random_state`` at
    ``seed`` and ``n_jobs`` at :data:`FIT_JOBS` (where its default is not already None: one job)."""
    steps = [_estimator_class(name)() for name in estimator.steps]
    if len(steps) == 1:
        model = steps[0]
    else:
        from sklearn.pipeline import make_pipeline

        model = make_pipeline(*steps)
    names = model.get_params(deep=True)
    owned = {name: seed for name in names if name.rpartition("__")[2] == "random_state"}
    # n_jobs None is one job outside a joblib context (a worker's fit runs in none); only another default is set
    owned.update(
        {name: FIT_JOBS for name, v in names.items() if name.rpartition("__")[2] == "n_jobs" and v is not None}
    )
    settings = dict(params)
    if estimator.work_parameter is not None:
        settings[estimator.work_parameter] = work
    if estimator.is_mlp:
        settings.update(_mlp_settings(settings, work, exact_epochs))
    model.set_params(**owned, **settings)
    return model


def _mlp_settings(settings: dict[str, Any], work: int, exact_epochs: bool) -> dict[str, Any]:
    """MLPClassifier's own: layer widths as a tuple; ``exact_epochs``: no stopping before ``max_iter``."""
    extra: dict[str, Any] = {}
    if "hidden_layer_sizes" in settings:
        extra["hidden_layer_sizes"] = tuple(settings["hidden_layer_sizes"])
    if exact_epochs and MLP_WORK_PARAMETER in settings:
        # Stopping needs n_iter_no_change epochs without improvement: never within max_iter.
        extra.update(n_iter_no_change=work + 1, early_stopping=False)
    return extra


def score(estimator: Estimator, model: Any, data: Data) -> float:
    """The fitted model's held-out score by the grid's scorer (accuracy: ``model.score``, as before scorers)."""
    if estimator.is_mlp and estimator.scoring == "accuracy":
        return float(model.score(data.X_test, data.y_test))
    from sklearn.metrics import get_scorer

    return float(get_scorer(estimator.scoring)(model, data.X_test, data.y_test))


def iterations_run(model: Any, work: int) -> int:
    """The iterations the fit ran: its final step's ``n_iter_`` (the most of its classes), else ``work``."""
    steps = getattr(model, "steps", None)
    final = steps[-1][1] if steps else model
    ran = getattr(final, "n_iter_", None)
    return work if ran is None else int(np.max(ran))

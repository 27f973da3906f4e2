"""The estimators ``spark-mllib`` trains as Spark ML's own, and how their scikit-learn parameters carry over.

A mapped estimator's fit is built with the grid's parameters and the work axis's value, and every parameter
with a Spark ML counterpart (:attr:`Counterpart.params`, the defaults included: scikit-learn's defaults are
the model the grid means) is translated by :func:`spark_params`; a parameter the grid sets that has no
counterpart is refused when the grid is read (:func:`_unmapped`), as are the estimators not listed here.
MLPClassifier keeps its own mapping (:mod:`sweeper.launch.spark.mllib`'s ``mllib_params``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sweeper.config.estimator import prototype
from sweeper.config.grid import MLP_ESTIMATOR, Workload
from sweeper.config.schema import Problems

SPARK_MAX_DEPTH = 30  # Spark ML's deepest tree: scikit-learn's max_depth None (unlimited) becomes it
HIST_DEPTH = 5  # HistGradientBoosting's max_depth None: its 31 leaves at most are about 5 levels
CHECKED_ROWS = 1000  # training rows a value is checked against before the data is loaded
MULTICLASS_DATASETS = ("digits", "mnist", "fashion-mnist")  # ten classes each: no binary-only estimator
# scikit-learn scorer -> Spark ML evaluator metric (and whether scikit-learn's sign is the negative of it)
EVALUATOR_METRICS: dict[str, tuple[str, bool]] = {
    "accuracy": ("accuracy", False),
    "f1_weighted": ("f1", False),
    "r2": ("r2", False),
    "neg_mean_squared_error": ("mse", True),
    "neg_root_mean_squared_error": ("rmse", True),
    "neg_mean_absolute_error": ("mae", True),
}


Translate = Callable[[Mapping[str, Any], int], dict[str, Any]]  # (get_params(), training rows) -> Spark ML's
CLASSIFIER_IMPURITY = {"gini": "gini", "entropy": "entropy", "log_loss": "entropy"}
REGRESSOR_IMPURITY = {"squared_error": "variance"}


def _classifier_forest(params: Mapping[str, Any], n_train: int) -> dict[str, Any]:
    return _forest(params, n_train, CLASSIFIER_IMPURITY)


def _regressor_forest(params: Mapping[str, Any], n_train: int) -> dict[str, Any]:
    return _forest(params, n_train, REGRESSOR_IMPURITY)


def _forest(params: Mapping[str, Any], n_train: int, criteria: Mapping[str, str]) -> dict[str, Any]:
    criterion = params["criterion"]
    if criterion not in criteria:
        raise ValueError(f"criterion {criterion!r} has no Spark ML impurity (mapped: {', '.join(criteria)})")
    samples = params["max_samples"]
    return {
        "seed": int(params["random_state"]),
        "numTrees": int(params["n_estimators"]),
        "maxDepth": _depth(params["max_depth"], SPARK_MAX_DEPTH),
        "featureSubsetStrategy": _features(params["max_features"]),
        "minInstancesPerNode": _leaf(params["min_samples_leaf"], n_train),
        "bootstrap": bool(params["bootstrap"]),
        "impurity": criteria[criterion],
        "subsamplingRate": 1.0 if samples is None else _fraction(samples, n_train, "max_samples"),
    }


def _boosting(params: Mapping[str, Any], n_train: int) -> dict[str, Any]:
    hist = "max_iter" in params  # HistGradientBoosting's iterations, GradientBoosting's n_estimators
    return {
        "seed": int(params["random_state"]),
        "maxIter": int(params["max_iter" if hist else "n_estimators"]),
        "stepSize": float(params["learning_rate"]),
        "maxDepth": _depth(params["max_depth"], HIST_DEPTH if hist else SPARK_MAX_DEPTH),
        "minInstancesPerNode": _leaf(params["min_samples_leaf"], n_train),
        "subsamplingRate": 1.0 if hist else float(params["subsample"]),
    }


def _logistic(params: Mapping[str, Any], n_train: int) -> dict[str, Any]:
    """scikit-learn's C weighs the summed loss against half the squared norm; Spark ML's regParam weighs the
    norm against the mean loss: regParam = 1 / (C x rows)."""
    penalty = params["penalty"]
    mixing = {"l2": 0.0, "l1": 1.0, None: 0.0, "elasticnet": params["l1_ratio"]}
    if penalty not in mixing:
        raise ValueError(f"penalty {penalty!r} has no Spark ML counterpart (mapped: l2, l1, elasticnet, None)")
    return {
        "maxIter": int(params["max_iter"]),
        "tol": float(params["tol"]),
        "fitIntercept": bool(params["fit_intercept"]),
        "regParam": 0.0 if penalty is None else 1.0 / (float(params["C"]) * n_train),
        "elasticNetParam": float(mixing[penalty] or 0.0),
    }


def _linear(params: Mapping[str, Any], n_train: int) -> dict[str, Any]:
    """LinearRegression: least squares, no penalty (Spark ML's regParam 0 by default)."""
    return {"fitIntercept": bool(params["fit_intercept"])}


@dataclass(frozen=True)
class Counterpart:
    """A scikit-learn estimator's Spark ML class, its parameters that have a counterpart there and how they are
    translated."""

    spark_class: str
    params: tuple[str, ...]
    translate: Translate
    binary_only: bool = False


_FOREST = ("n_estimators", "max_depth", "max_features", "min_samples_leaf", "bootstrap", "criterion", "max_samples")
_LOGISTIC = ("max_iter", "C", "tol", "fit_intercept", "penalty", "l1_ratio")
_BOOSTING = ("learning_rate", "max_depth", "min_samples_leaf")
MAPPED: dict[str, Counterpart] = {
    "sklearn.linear_model.LogisticRegression": Counterpart(
        "pyspark.ml.classification.LogisticRegression", _LOGISTIC, _logistic
    ),
    "sklearn.ensemble.RandomForestClassifier": Counterpart(
        "pyspark.ml.classification.RandomForestClassifier", _FOREST, _classifier_forest
    ),
    "sklearn.ensemble.GradientBoostingClassifier": Counterpart(
        "pyspark.ml.classification.GBTClassifier", ("n_estimators", "subsample", *_BOOSTING), _boosting, True
    ),
    "sklearn.ensemble.HistGradientBoostingClassifier": Counterpart(
        "pyspark.ml.classification.GBTClassifier", ("max_iter", *_BOOSTING), _boosting, True
    ),
    "sklearn.linear_model.LinearRegression": Counterpart(
        "pyspark.ml.regression.LinearRegression", ("fit_intercept",), _linear
    ),
    "sklearn.ensemble.RandomForestRegressor": Counterpart(
        "pyspark.ml.regression.RandomForestRegressor", _FOREST, _regressor_forest
    ),
}
MAPPED_NAMES = (MLP_ESTIMATOR, *MAPPED)  # what spark-mllib trains, as errors list it


def counterpart(steps: tuple[str, ...]) -> Counterpart | None:
    """The Spark ML counterpart of a one-step estimator (None: MLPClassifier's own, a pipeline, or unmapped)."""
    return MAPPED.get(steps[0]) if len(steps) == 1 else None


def _unmapped(steps: tuple[str, ...], names: tuple[str, ...]) -> list[str]:
    """The parameters among ``names`` (those a grid sets) without a counterpart in Spark ML."""
    found = counterpart(steps)
    return [] if found is None else [name for name in names if name not in found.params]


def spark_params(steps: tuple[str, ...], params: Mapping[str, Any], n_train: int) -> dict[str, Any]:
    """The Spark ML parameters of a mapped estimator built with ``params`` (its full ``get_params()``, the work axis
    and ``random_state`` set) on ``n_train`` training rows; raises ValueError naming a value Spark ML cannot take.

    >>> spark_params(("sklearn.ensemble.RandomForestClassifier",), {"n_estimators": 20, "max_depth": None,
    ...     "max_features": "sqrt", "min_samples_leaf": 1, "bootstrap": True, "criterion": "gini",
    ...     "max_samples": None, "random_state": 3}, 100)  # doctest: +NORMALIZE_WHITESPACE
    {'seed': 3, 'numTrees': 20, 'maxDepth': 30, 'featureSubsetStrategy': 'sqrt', 'minInstancesPerNode': 1,
     'bootstrap': True, 'impurity': 'gini', 'subsamplingRate': 1.0}
    >>> spark_params(("sklearn.linear_model.LogisticRegression",), {"max_iter": 50, "C": 0.5, "tol": 1e-4,
    ...     "fit_intercept": True, "penalty": "l2", "l1_ratio": None, "random_state": 0}, 200)
    {'maxIter': 50, 'tol': 0.0001, 'fitIntercept': True, 'regParam': 0.01, 'elasticNetParam': 0.0}
    """
    return MAPPED[steps[0]].translate(params, n_train)


def _depth(value: Any, unlimited: int) -> int:
    if value is None:
        return unlimited
    if int(value) > SPARK_MAX_DEPTH:
        raise ValueError(f"max_depth {value} is deeper than Spark ML's deepest tree ({SPARK_MAX_DEPTH})")
    return int(value)


def _features(value: Any) -> str:
    """max_features as Spark ML's featureSubsetStrategy: sqrt, log2, all, a fraction or a count."""
    if value is None or value == 1.0:
        return "all"
    if isinstance(value, str):
        return value
    return str(int(value)) if isinstance(value, int) else str(float(value))


def _leaf(value: Any, n_train: int) -> int:
    """min_samples_leaf (a count, or a fraction of the rows) as Spark ML's minInstancesPerNode."""
    return int(value) if isinstance(value, int) else max(1, math.ceil(float(value) * n_train))


def _fraction(value: Any, n_train: int, name: str) -> float:
    """A fraction of the rows (a count of them as its share); raises ValueError beyond them."""
    share = float(value) if isinstance(value, float) else int(value) / n_train
    if not 0 < share <= 1:
        raise ValueError(f"{name} {value} is not a share of the {n_train} training rows")
    return share


def check_workload(check: Problems, engine: str, workload: Workload) -> None:
    """What ``engine`` (spark-mllib) can train of a workload other than MLPClassifier's: a mapped estimator, its
    parameters with a counterpart and values Spark ML takes, a scorer with a Spark ML evaluator, two classes for
    the binary-only."""
    estimator = workload.estimator
    found = counterpart(estimator.steps)
    if found is None:
        mapped = ", ".join(name.rpartition(".")[2] for name in MAPPED_NAMES)
        check.fail(
            "engines",
            f"{engine!r} trains Spark ML's own counterparts of {mapped} only; {estimator.name} has none: leave "
            f"{engine} out of engines",
        )
        return
    work = () if estimator.work_parameter is None else (estimator.work_parameter,)
    for name in _unmapped(estimator.steps, (*work, *(name for name, _ in workload.model_axes))):
        check.fail(
            "workload.iterations.parameter" if name in work else f"workload.model.{name}",
            f"has no counterpart in Spark ML's {found.spark_class} ({engine} maps {', '.join(found.params)}): leave "
            f"it out, or leave {engine} out of engines",
        )
    if estimator.scoring not in EVALUATOR_METRICS:
        check.fail(
            "workload.scoring",
            f"{estimator.scoring} has no Spark ML evaluator ({engine} scores by {', '.join(EVALUATOR_METRICS)})",
        )
    if found.binary_only and workload.dataset.name in MULTICLASS_DATASETS:
        check.fail(
            "workload.dataset",
            f"{workload.dataset.name} has ten classes, and Spark ML's {found.spark_class} (gradient-boosted trees) "
            f"takes two only: use a two-class dataset, or leave {engine} out of engines",
        )
    _value_problems(check, workload, found)


def _value_problems(check: Problems, workload: Workload, found: Counterpart) -> None:
    """Each mapped parameter's values (and the work axis's) as Spark ML would get them: those it cannot take."""
    steps = workload.estimator.steps
    defaults = {**prototype(steps).get_params(), "random_state": 0}
    work = workload.estimator.work_parameter
    axes = [(name, values) for name, values in workload.model_axes if name in found.params]
    if work is not None:
        axes.append((work, workload.epochs))
    for name, values in axes:
        key = "workload.iterations.values" if name == work else f"workload.model.{name}"
        for value in values:
            try:
                spark_params(steps, {**defaults, name: value}, CHECKED_ROWS)
            except ValueError as error:
                check.fail(key, str(error))

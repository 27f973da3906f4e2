"""``workload.model`` and ``workload.param_grid``: what the grid's estimator takes (scikit-learn imported lazily).

MLPClassifier (the default) keeps its own defaults and checks (``hidden_layer_sizes`` as layer widths,
``mllib_solver`` for spark-mllib); any other estimator takes its ``get_params()`` names with scalar values,
checked by its own ``_parameter_constraints`` (:mod:`sweeper.config.estimator`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sweeper.config import estimator
from sweeper.config.schema import Problems, is_scalar
from sweeper.text import shown

Model = Any  # the grid's estimator built with its defaults (sweeper.config.estimator.prototype); None: MLPClassifier

# MLPClassifier parameters the sweeper owns: epochs set max_iter, the trial sets random_state.
MODEL_KEYS_OWNED = ("max_iter", "random_state")
DEFAULT_MODEL: dict[str, Any] = {
    "hidden_layer_sizes": (100, 50),
    "activation": "relu",
    "solver": "adam",
}
# workload.model keys only spark-mllib reads (scikit-learn's MLPClassifier has no such parameter)
MLLIB_ONLY_PARAMS = ("mllib_solver",)
MLLIB_SOLVERS = ("l-bfgs", "gd")  # what Spark ML's MultilayerPerceptronClassifier takes as its solver
MAX_LAYERS = 100
MAX_LAYER_WIDTH = 100_000


def _mlp_params() -> tuple[str, ...]:
    """The MLPClassifier parameters a grid may set."""
    from sklearn.neural_network import MLPClassifier

    return tuple(k for k in MLPClassifier().get_params() if k not in MODEL_KEYS_OWNED)


def model_params(model: Model) -> tuple[str, ...]:
    """The parameters a grid may set on ``model`` (MLPClassifier's: with ``mllib_solver``)."""
    return _mlp_params() + MLLIB_ONLY_PARAMS if model is None else estimator.settable(model)


def model_axes(check: Problems, value: Any, model: Model = None) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """``workload.model``: the grid's parameters, each as a tuple of values (MLPClassifier: DEFAULT_MODEL updated
    with them)."""
    section = check.mapping(value, "workload.model")
    if section is None:
        return ()
    if model is not None:
        return _estimator_axes(check, section, model)
    allowed = model_params(None)
    for owned in MODEL_KEYS_OWNED:
        if owned in section:
            check.fail(
                f"workload.model.{owned}", "is set by the sweeper (epochs set max_iter, trials set random_state)"
            )
    check.known_keys({k: v for k, v in section.items() if k not in MODEL_KEYS_OWNED}, "workload.model", allowed)
    merged = {**DEFAULT_MODEL, **{k: v for k, v in section.items() if k in allowed}}
    return tuple((param, tuple(_model_values(check, param, raw))) for param, raw in merged.items())


def _estimator_axes(check: Problems, section: dict[str, Any], model: Model) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """``workload.model`` of an estimator other than MLPClassifier: its parameters, each checked by its constraints."""
    allowed = estimator.settable(model)
    for param in section:
        reason = estimator.owned(param) if isinstance(param, str) else None
        if reason is not None:
            check.fail(f"workload.model.{param}", f"is set by the sweeper ({reason})")
    check.known_keys({k: v for k, v in section.items() if not isinstance(k, str) or estimator.owned(k) is None},
                     "workload.model", allowed)  # fmt: skip
    return tuple(
        (param, tuple(check.axis(raw, f"workload.model.{param}", _param_check(check, param, model))[0]))
        for param, raw in section.items()
        if param in allowed
    )


def _model_values(check: Problems, param: str, raw: Any) -> list[Any]:
    """The values of one ``workload.model`` parameter (a list is an axis; a list of layer widths is one value)."""
    if param == "hidden_layer_sizes" and not (isinstance(raw, list) and raw and all(isinstance(x, list) for x in raw)):
        raw = [raw]
    values, _ = check.axis(raw, f"workload.model.{param}", _param_check(check, param))
    return values


def _param_check(check: Problems, param: str, model: Model = None) -> Callable[[Any, str], Any]:
    """How one value of a model parameter is checked (see :meth:`Problems.axis`)."""
    if model is not None:
        return lambda value, key: _estimator_value(check, model, param, value, key)
    if param == "hidden_layer_sizes":
        return lambda value, key: _layers(check, value, key)
    if param == "mllib_solver":
        return lambda value, key: check.choice(value, key, MLLIB_SOLVERS)
    return lambda value, key: _mlp_value(check, param, value, key)


def _layers(check: Problems, option: Any, key: str) -> tuple[int, ...] | None:
    """One ``hidden_layer_sizes`` value: one width or a list of widths, each within MAX_LAYER_WIDTH."""
    layers = option if isinstance(option, (list, tuple)) else [option]
    if (
        not layers
        or len(layers) > MAX_LAYERS
        or not all(isinstance(n, int) and not isinstance(n, bool) and 0 < n <= MAX_LAYER_WIDTH for n in layers)
    ):
        check.fail(
            key,
            f"must be 1 to {MAX_LAYERS} layer widths from 1 to {MAX_LAYER_WIDTH}, such as [100, 50], "
            f"got {shown(option)}",
        )
        return None
    return tuple(layers)


def _mlp_value(check: Problems, param: str, value: Any, key: str) -> Any:
    """``value`` if ``MLPClassifier`` takes it for ``param``; else None, the problem recorded.

    (No parameter a grid may set takes None.)
    """
    if value is not None and not is_scalar(value):
        check.fail(key, f"must be a number, a string or a boolean, got {shown(value)}")
        return None
    from sklearn.neural_network import MLPClassifier

    try:
        MLPClassifier(**{param: value})._validate_params()
    except (ValueError, TypeError) as error:
        check.fail(key, str(error))
        return None
    return value


def _estimator_value(check: Problems, model: Model, param: str, value: Any, key: str) -> Any:
    """``value`` if it is a scalar (or null) the estimator's constraints accept for ``param``; else None, recorded."""
    if value is not None and not is_scalar(value):
        check.fail(key, f"must be a number, a string, a boolean or null, got {shown(value)}")
        return None
    problem = estimator.value_problem(model, param, value)
    if problem is not None:
        check.fail(key, problem)
        return None
    return value


def read_param_grid(
    check: Problems, value: Any, mode: str | None, model: Model = None
) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """``workload.param_grid`` (mode search only): each estimator parameter with its values."""
    if value is None:
        if mode == "search":
            check.fail("workload.param_grid", "is required with mode: search, e.g. {alpha: [0.0001, 0.001]}")
        return ()
    section = check.mapping(value, "workload.param_grid")
    if section is None:
        return ()
    if mode != "search":
        check.fail("workload.param_grid", f"only applies to mode: search, not {mode!r}")
    allowed = _mlp_params() if model is None else estimator.settable(model)
    check.known_keys(section, "workload.param_grid", allowed)
    grid = []
    for param, raw in section.items():
        if param not in allowed:
            continue
        values, _ = check.axis(raw, f"workload.param_grid.{param}", _param_check(check, param, model))
        grid.append((param, tuple(values)))
    return tuple(grid)

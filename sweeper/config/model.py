"""``workload.model`` and ``workload.param_grid``: what scikit-learn's MLPClassifier (imported lazily) takes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sweeper.config.schema import Problems, is_scalar
from sweeper.text import shown

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


def mlp_params() -> tuple[str, ...]:
    """The MLPClassifier parameters a grid may set."""
    from sklearn.neural_network import MLPClassifier

    return tuple(k for k in MLPClassifier().get_params() if k not in MODEL_KEYS_OWNED)


def model_axes(check: Problems, value: Any) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """``workload.model``: DEFAULT_MODEL updated with the grid's parameters, each as a tuple of values."""
    section = check.mapping(value, "workload.model")
    if section is None:
        return ()
    allowed = mlp_params() + MLLIB_ONLY_PARAMS
    for owned in MODEL_KEYS_OWNED:
        if owned in section:
            check.fail(
                f"workload.model.{owned}", "is set by the sweeper (epochs set max_iter, trials set random_state)"
            )
    check.known_keys({k: v for k, v in section.items() if k not in MODEL_KEYS_OWNED}, "workload.model", allowed)
    merged = {**DEFAULT_MODEL, **{k: v for k, v in section.items() if k in allowed}}
    return tuple((param, tuple(_model_values(check, param, raw))) for param, raw in merged.items())


def _model_values(check: Problems, param: str, raw: Any) -> list[Any]:
    """The values of one ``workload.model`` parameter (a list is an axis; a list of layer widths is one value)."""
    if param == "hidden_layer_sizes" and not (isinstance(raw, list) and raw and all(isinstance(x, list) for x in raw)):
        raw = [raw]
    values, _ = check.axis(raw, f"workload.model.{param}", param_check(check, param))
    return values


def param_check(check: Problems, param: str) -> Callable[[Any, str], Any]:
    """How one value of a model parameter is checked (see :meth:`Problems.axis`)."""
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


def read_param_grid(check: Problems, value: Any, mode: str | None) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """``workload.param_grid`` (mode search only): each MLPClassifier parameter with its values."""
    if value is None:
        if mode == "search":
            check.fail("workload.param_grid", "is required with mode: search, e.g. {alpha: [0.0001, 0.001]}")
        return ()
    section = check.mapping(value, "workload.param_grid")
    if section is None:
        return ()
    if mode != "search":
        check.fail("workload.param_grid", f"only applies to mode: search, not {mode!r}")
    allowed = mlp_params()
    check.known_keys(section, "workload.param_grid", allowed)
    grid = []
    for param, raw in section.items():
        if param not in allowed:
            continue
        values, _ = check.axis(raw, f"workload.param_grid.{param}", param_check(check, param))
        grid.append((param, tuple(values)))
    return tuple(grid)

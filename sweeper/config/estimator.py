"""``workload.estimator``: a scikit-learn-compatible class (or a pipeline of them) named by its dotted path.

A name is resolved with importlib only (the module part, then the attribute), and only from a distribution
installed beside the sweeper: nothing a grid holds is executed as code. The class is built once with its
defaults (:func:`prototype`), and the grid's parameters are checked against it: its ``get_params()`` names and,
where the class declares them, its ``_parameter_constraints`` (scikit-learn's own validation and messages).
"""

from __future__ import annotations

import functools
import importlib
import re
from importlib.metadata import packages_distributions
from typing import Any

from sweeper.config.grid import CLASSIFIER, MLP_ESTIMATOR, REGRESSOR
from sweeper.config.schema import did_you_mean
from sweeper.text import shown

_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+")
EXAMPLE = "sklearn.ensemble.RandomForestClassifier"
MAX_STEPS = 20  # a pipeline's steps
# Parameters the sweeper sets on every fit: the trial's seed, and one thread of the estimator's own (the engines
# are the parallelism; n_jobs=-1 inside a fit would dispatch to the launch's joblib backend again).
OWNED = {"random_state": "trials set it", "n_jobs": "the engines run the fits in parallel; each fit takes 1 job"}


class EstimatorProblem(ValueError):
    """A name that does not resolve to a usable estimator, with the fix."""


def steps_of(value: Any) -> tuple[str, ...] | None:
    """A grid's ``workload.estimator`` as its steps (one name: one step), or None when it is neither form."""
    if value is None:
        return (MLP_ESTIMATOR,)
    listed = [value] if isinstance(value, str) else value
    if not isinstance(listed, list) or not 0 < len(listed) <= MAX_STEPS or not all(isinstance(n, str) for n in listed):
        return None
    return tuple(listed)


@functools.lru_cache(maxsize=32)
def prototype(steps: tuple[str, ...]) -> Any:
    """The estimator with its defaults (a pipeline of ``steps`` as ``make_pipeline`` names them); raises
    :class:`EstimatorProblem` naming the step and the fix."""
    classes = [_estimator_class(name) for name in steps]
    built = [_built(name, cls) for name, cls in zip(steps, classes, strict=True)]
    for name, step in zip(steps[:-1], built[:-1], strict=True):
        if not hasattr(step, "transform"):
            raise EstimatorProblem(
                f"{name} has no transform: every step of a pipeline but the last must transform the data "
                "(a scaler, an encoder, a selector)"
            )
    if len(built) == 1:
        return built[0]
    from sklearn.pipeline import make_pipeline

    return make_pipeline(*built)


def kind_of(model: Any) -> str:
    """``classifier`` or ``regressor`` (scikit-learn's own tags); raises :class:`EstimatorProblem` for neither."""
    from sklearn.base import is_classifier, is_regressor

    if is_classifier(model):
        return CLASSIFIER
    if is_regressor(model):
        return REGRESSOR
    raise EstimatorProblem(
        f"{type(_last_step(model)).__name__} is neither a classifier nor a regressor (scikit-learn's is_classifier "
        "and is_regressor): the sweeper scores each fit on held-out labels or targets"
    )


def settable(model: Any) -> tuple[str, ...]:
    """The parameters a grid may set: ``get_params()`` names (a pipeline's: ``step__param``), but those the
    sweeper sets (:data:`OWNED`)."""
    from sklearn.pipeline import Pipeline

    if isinstance(model, Pipeline):
        names = [name for name in model.get_params(deep=True) if "__" in name]
    else:
        names = list(model.get_params(deep=False))
    return tuple(name for name in names if owned(name) is None)


def owned(name: str) -> str | None:
    """Why the sweeper sets parameter ``name`` itself (any step's ``random_state``, ``n_jobs``), or None."""
    return OWNED.get(name.rpartition("__")[2])


def parameter(model: Any, wanted: str) -> str | None:
    """``wanted`` as the estimator names it: itself, or the one pipeline step parameter ``*__wanted``."""
    names = model.get_params(deep=True)
    if wanted in names:
        return wanted
    endings = [name for name in names if name.endswith(f"__{wanted}")]
    return endings[0] if len(endings) == 1 else None


def value_problem(model: Any, name: str, value: Any) -> str | None:
    """What the estimator's own ``_parameter_constraints`` say against ``name: value`` (None: accepted, or no
    constraint declared)."""
    from sklearn.utils._param_validation import InvalidParameterError, validate_parameter_constraints

    prefix, _, param = name.rpartition("__")
    owner = model.get_params(deep=True)[prefix] if prefix else model
    constraints = getattr(type(owner), "_parameter_constraints", None)
    if not isinstance(constraints, dict) or param not in constraints:
        return None
    try:
        validate_parameter_constraints({param: constraints[param]}, {param: value}, type(owner).__name__)
    except InvalidParameterError as error:
        return str(error)
    return None


def _estimator_class(name: str) -> type:
    """The class ``name`` names, imported from an installed distribution (module part, then attribute)."""
    if not _DOTTED.fullmatch(name):
        raise EstimatorProblem(f"must be a dotted class name such as {EXAMPLE}, got {shown(name)}")
    module_name, _, attribute = name.rpartition(".")
    top = module_name.partition(".")[0]
    if top not in packages_distributions():
        raise EstimatorProblem(
            f"{shown(name)}: no installed package provides {top!r}; install the package of the estimator beside "
            f"the sweeper (pip install ...), or name a scikit-learn one such as {EXAMPLE}"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise EstimatorProblem(f"{shown(name)}: cannot import module {module_name!r} ({error})") from None
    found = getattr(module, attribute, None)
    if found is None:
        public = tuple(n for n in dir(module) if not n.startswith("_"))
        hint = did_you_mean(attribute, public)
        raise EstimatorProblem(f"{shown(name)}: module {module_name!r} has no {attribute!r}{hint}")
    if not isinstance(found, type) or not all(callable(getattr(found, m, None)) for m in ("fit", "get_params")):
        what = "a class" if isinstance(found, type) else f"a {type(found).__name__}"
        raise EstimatorProblem(
            f"{shown(name)} is {what} without fit and get_params, not an estimator: name a scikit-learn-compatible "
            f"classifier or regressor class such as {EXAMPLE}"
        )
    return found


def _built(name: str, cls: type) -> Any:
    """An instance of ``cls`` with its defaults."""
    try:
        return cls()
    except Exception as error:  # a third-party constructor may raise anything: named, never a traceback
        raise EstimatorProblem(f"{name} cannot be built with its default parameters ({error})") from None


def _last_step(model: Any) -> Any:
    steps = getattr(model, "steps", None)
    return steps[-1][1] if isinstance(steps, list) and steps else model

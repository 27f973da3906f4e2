"""``workload.estimator``, ``workload.iterations`` (or ``epochs``) and ``workload.scoring``: what each fit trains,
the parameter its work axis sets, and how its held-out score is taken."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sweeper.config.estimator import (
    EXAMPLE,
    MAX_STEPS,
    EstimatorProblem,
    kind_of,
    owned,
    parameter,
    prototype,
    steps_of,
    value_problem,
)
from sweeper.config.grid import DEFAULT_ESTIMATOR, MLP_ESTIMATOR, MLP_WORK_PARAMETER, SCORING
from sweeper.config.model import Model
from sweeper.config.schema import Problems, did_you_mean, item_key
from sweeper.config.sections import ITERATIONS, WORKLOAD
from sweeper.text import shown

NO_WORK_AXIS = (1,)  # an estimator without a work axis: one value, set on no parameter
SCORER_EXAMPLES = "accuracy, balanced_accuracy, f1_macro, r2, neg_mean_squared_error"


def estimator(check: Problems, section: dict[str, Any]) -> tuple[tuple[str, ...], Model, str] | None:
    """``workload.estimator``: its steps, the estimator built with its defaults (None: MLPClassifier, checked by
    :mod:`sweeper.config.model`'s own rules) and its kind; None when refused."""
    value = section.get("estimator")
    steps = steps_of(value)
    if steps is None:
        check.fail(
            "workload.estimator",
            f"must be a dotted class name such as {EXAMPLE}, or a list of 1 to {MAX_STEPS} of them (a pipeline, the "
            f"last one the model), got {shown(value)}",
        )
        return None
    try:
        model = prototype(steps)
        kind = kind_of(model)
    except EstimatorProblem as error:
        check.fail("workload.estimator", str(error))
        return None
    return steps, (None if steps == DEFAULT_ESTIMATOR.steps else model), kind


def work_axis(
    check: Problems, section: dict[str, Any], steps: tuple[str, ...], model: Model
) -> tuple[str | None, list[int], bool]:
    """The parameter the work axis sets (None: no work axis), its values and whether they are all valid.

    ``epochs: [...]`` is ``iterations: {parameter: max_iter, values: [...]}``; MLPClassifier sweeps ``epochs``'
    default; any other estimator without either key sweeps no work axis."""
    if "iterations" in section and "epochs" in section:
        check.fail(
            "workload.iterations",
            "and workload.epochs both name the work axis (epochs is iterations: {parameter: max_iter, values: "
            "[...]}): keep one",
        )
        return None, [], False
    if "iterations" in section:
        return _iterations(check, section["iterations"], model)
    if model is None or "epochs" in section:
        named = MLP_WORK_PARAMETER if model is None else parameter(model, MLP_WORK_PARAMETER)
        if named is None:
            check.fail(
                "workload.epochs",
                f"sets {MLP_WORK_PARAMETER}, which {steps[-1]} does not take: name its own knob of work with "
                "workload.iterations: {parameter: n_estimators, values: [10, 50]}, or leave both out to sweep "
                "no work axis",
            )
            return None, [], False
        values, valid = WORKLOAD.field("epochs").read_axis(section, WORKLOAD.key, check)
        return named, values, valid and _constrained(check, model, named, values, "workload.epochs")
    return None, list(NO_WORK_AXIS), True


def _iterations(check: Problems, value: Any, model: Model) -> tuple[str | None, list[int], bool]:
    """``workload.iterations: {parameter, values}``: an integer parameter of the estimator, and its values."""
    section = ITERATIONS.open(value, check)
    if section is None:
        return None, [], False
    if "parameter" not in section or "values" not in section:
        example = "{parameter: n_estimators, values: [10, 50]}"
        check.fail("workload.iterations", f"needs parameter and values, e.g. {example}")
        return None, [], False
    wanted = ITERATIONS.field("parameter").read(section, ITERATIONS.key, check)
    values, valid = ITERATIONS.field("values").read_axis(section, ITERATIONS.key, check)
    if wanted is None:
        return None, [], False
    named = _work_parameter(check, wanted, model)
    if named is None:
        return None, [], False
    return named, values, valid and _constrained(check, model, named, values, "workload.iterations.values")


def _work_parameter(check: Problems, wanted: str, model: Model) -> str | None:
    """The estimator's own name of ``wanted`` (a pipeline's: ``step__wanted``), or None when it has none."""
    from sklearn.neural_network import MLPClassifier

    found = model if model is not None else MLPClassifier()
    named = parameter(found, wanted)
    key = "workload.iterations.parameter"
    if named is None:
        names = tuple(found.get_params(deep=True))
        check.fail(
            key,
            f"{type(found).__name__} has no parameter {wanted!r} (the work axis is an integer knob of work such as "
            f"max_iter, n_estimators or max_depth; leave iterations out to sweep none){did_you_mean(wanted, names)}",
        )
        return None
    reason = owned(named)
    if reason is not None:
        check.fail(key, f"{named} is set by the sweeper ({reason})")
        return None
    return named


def _constrained(check: Problems, model: Model, named: str, values: list[int], key: str) -> bool:
    """Whether the estimator's constraints take every work-axis value (MLPClassifier: Integer's bounds do)."""
    if model is None:
        return True
    problems = [(i, value_problem(model, named, v)) for i, v in enumerate(values)]
    for index, problem in problems:
        if problem is not None:
            check.fail(item_key(key, index, len(values)), problem)
    return all(problem is None for _, problem in problems)


def scoring(check: Problems, value: Any, kind: str) -> str | None:
    """``workload.scoring``: a scikit-learn scorer name; default accuracy (classifiers) or r2 (regressors)."""
    if value is None:
        return SCORING[kind]
    from sklearn.metrics import get_scorer_names

    names = tuple(get_scorer_names())
    if not isinstance(value, str) or value not in names:
        check.fail(
            "workload.scoring",
            f"must be a scikit-learn scorer name (sklearn.metrics.get_scorer_names(): {SCORER_EXAMPLES}, ...), "
            f"got {shown(value)}{did_you_mean(value, names)}",
        )
        return None
    return value


# -- the work axis as every view names it -----------------------------------------------------------

EPOCHS = "epochs"  # MLPClassifier's max_iter, and every row from before schema 11
NO_WORK_AXIS_NAME = "no work axis"  # an estimator swept at one point of work (rows' epochs: 1)


def axis_name(estimator: object, work_axis: object) -> str:
    """What a row's ``epochs`` column counts, as every view names it: ``epochs`` (MLPClassifier, a row from before
    schema 11), the parameter the grid's work axis set (a pipeline's without its step), or no work axis.

    >>> axis_name(None, None), axis_name(MLP_ESTIMATOR, "max_iter"), axis_name("a.Forest", "n_estimators")
    ('epochs', 'epochs', 'n_estimators')
    >>> axis_name("a.Scaler + a.Logistic", "logistic__max_iter"), axis_name("a.SVC", None)
    ('max_iter', 'no work axis')
    """
    if not isinstance(estimator, str) or estimator == MLP_ESTIMATOR:
        return EPOCHS
    return work_axis.rpartition("__")[2] if isinstance(work_axis, str) else NO_WORK_AXIS_NAME


def sweep_axis_name(pairs: Iterable[tuple[object, object]]) -> str:
    """The one name of the work axis of rows given as (estimator, work_axis) pairs; rows of several axes:
    ``epochs``, the column's own name."""
    names = {axis_name(estimator, work_axis) for estimator, work_axis in pairs}
    return names.pop() if len(names) == 1 else EPOCHS


ACCURACY = "accuracy"  # a classifier's default scorer, and every row from before schema 11


def score_name(scorings: Iterable[object]) -> str:
    """The one name of the score held in rows' ``accuracy`` column, given their ``scoring``: ``accuracy`` (a
    classifier's default, rows from before schema 11), the scorer the sweep used (``r2``), or ``score`` for rows
    of several scorers.

    >>> score_name([None, "accuracy"]), score_name(["r2", "r2"]), score_name(["r2", "f1_macro"])
    ('accuracy', 'r2', 'score')
    """
    names = {scoring if isinstance(scoring, str) and scoring else ACCURACY for scoring in scorings}
    return names.pop() if len(names) == 1 else "score" if names else ACCURACY


def axis_point(name: str) -> str:
    """One value of the work axis in words: ``epochs value``, ``n_estimators value``; without a work axis, a point.

    >>> axis_point("epochs"), axis_point(NO_WORK_AXIS_NAME)
    ('epochs value', 'point')
    """
    return "point" if name == NO_WORK_AXIS_NAME else f"{name} value"


def axis_text(values: Iterable[object], name: str) -> str:
    """Values of the work axis in words: ``10, 100 epochs``, ``n_estimators 10, 50``; without one, no work axis.

    >>> axis_text([10, 100], "epochs"), axis_text([10], "n_estimators"), axis_text([1], NO_WORK_AXIS_NAME)
    ('10, 100 epochs', 'n_estimators 10', 'no work axis')
    """
    joined = ", ".join(str(value) for value in values)
    if name == NO_WORK_AXIS_NAME:
        return name
    return f"{joined} {name}" if name == EPOCHS else f"{name} {joined}"

"""``workload.estimator``, ``iterations`` and ``scoring``: any scikit-learn estimator, checked before any launch."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sweeper.cli import main
from sweeper.config import load as grid_file
from sweeper.config.grid import DEFAULT_ESTIMATOR, Estimator
from sweeper.planning.measurements import measurement_key
from sweeper.planning.plan import make_plan
from tests.conftest import minimal_grid

FOREST = "sklearn.ensemble.RandomForestClassifier"
PIPELINE = ["sklearn.preprocessing.StandardScaler", "sklearn.linear_model.LogisticRegression"]


def workload(**values: Any) -> dict[str, Any]:
    """The minimal grid with its workload's ``epochs`` replaced by ``values``."""
    grid = minimal_grid()
    grid["workload"] = {"dataset": "digits", "trials": 1, **values}
    return grid


REFUSED = [
    pytest.param(
        workload(estimator="sklearn.ensemble.RandomForestClassifer"),
        r"workload.estimator: 'sklearn.ensemble.RandomForestClassifer': module 'sklearn.ensemble' has no "
        r"'RandomForestClassifer'; did you mean 'RandomForestClassifier'\?",
        id="unknown-estimator",
    ),
    pytest.param(
        workload(estimator="no_such_package.Model"),
        r"workload.estimator: 'no_such_package.Model': no installed package provides 'no_such_package'; install "
        r"the package of the estimator beside the sweeper",
        id="package-not-installed",
    ),
    pytest.param(
        workload(estimator="os.system"),
        r"no installed package provides 'os'",
        id="not-from-an-installed-distribution",
    ),
    pytest.param(
        workload(estimator="pandas.DataFrame"),
        r"workload.estimator: 'pandas.DataFrame' is a class without fit and get_params, not an estimator",
        id="a-class-that-is-no-estimator",
    ),
    pytest.param(
        workload(estimator="sklearn.preprocessing.StandardScaler"),
        r"workload.estimator: StandardScaler is neither a classifier nor a regressor",
        id="a-transformer-alone",
    ),
    pytest.param(
        workload(estimator=["sklearn.linear_model.LogisticRegression", "sklearn.preprocessing.StandardScaler"]),
        r"workload.estimator: sklearn.linear_model.LogisticRegression has no transform: every step of a pipeline "
        r"but the last must transform",
        id="a-pipeline-step-that-does-not-transform",
    ),
    pytest.param(
        workload(estimator="import os; os.system('x')"),
        r"workload.estimator: must be a dotted class name such as sklearn.ensemble.RandomForestClassifier",
        id="code-is-no-name",
    ),
    pytest.param(
        workload(estimator=FOREST, model={"max_dept": 3}),
        r"workload.model.max_dept: unknown key 'max_dept'; did you mean 'max_depth'\? \(allowed: bootstrap,",
        id="unknown-parameter",
    ),
    pytest.param(
        workload(estimator=FOREST, model={"criterion": "gini-ish"}),
        r"workload.model.criterion: The 'criterion' parameter of RandomForestClassifier must be a str among "
        r"\{.*\}. Got 'gini-ish' instead.",
        id="value-refused-by-its-constraint",
    ),
    pytest.param(
        workload(estimator=PIPELINE, model={"logisticregression__C": [1.0, -1]}),
        r"workload.model.logisticregression__C\[1\]: The 'C' parameter of LogisticRegression must be a float in "
        r"the range \(0.0, inf\]. Got -1 instead.",
        id="pipeline-step-value-refused",
    ),
    pytest.param(
        workload(estimator=FOREST, model={"random_state": 3}),
        r"workload.model.random_state: is set by the sweeper \(trials set it\)",
        id="random-state-owned",
    ),
    pytest.param(
        workload(estimator=FOREST, iterations={"parameter": "max_iter", "values": [10]}),
        r"workload.iterations.parameter: RandomForestClassifier has no parameter 'max_iter' \(the work axis is an "
        r"integer knob",
        id="axis-the-estimator-lacks",
    ),
    pytest.param(
        workload(estimator=FOREST, epochs=[10]),
        r"workload.epochs: sets max_iter, which sklearn.ensemble.RandomForestClassifier does not take: name its "
        r"own knob of work with workload.iterations",
        id="epochs-on-a-forest",
    ),
    pytest.param(
        workload(estimator=FOREST, iterations={"parameter": "n_estimators", "values": [10]}, epochs=[10]),
        r"workload.iterations: and workload.epochs both name the work axis",
        id="iterations-and-epochs",
    ),
    pytest.param(
        workload(estimator=FOREST, iterations={"parameter": "n_estimators"}),
        r"workload.iterations: needs parameter and values",
        id="iterations-without-values",
    ),
    pytest.param(
        workload(estimator=FOREST, iterations={"parameter": "n_estimators", "values": [10]}, model={"n_estimators": 5}),
        r"workload.model.n_estimators: is set by the work axis",
        id="work-parameter-in-model",
    ),
    pytest.param(
        workload(
            estimator=FOREST,
            iterations={"parameter": "n_estimators", "values": [10]},
            mode="search",
            param_grid={"n_estimators": [5, 10]},
        ),
        r"workload.param_grid.n_estimators: is set by the work axis",
        id="work-parameter-in-param-grid",
    ),
    pytest.param(
        {**workload(dataset="diabetes", estimator="sklearn.linear_model.Ridge"), "search": {"strategy": "halving"}},
        r"search.rung_axis: sklearn.linear_model.Ridge sweeps no work axis \(name one with workload.iterations\), so "
        r"halving has no epochs rungs: use rung_axis: fraction",
        id="halving-without-a-work-axis",
    ),
    pytest.param(
        workload(iterations={"parameter": "batch_size", "values": [32]}, model={"batch_size": 16}),
        r"workload.model.batch_size: is set by the work axis",
        id="an-mlp-work-parameter-in-model",
    ),
    pytest.param(
        workload(estimator="sklearn.svm.SVC", mode="data-parallel"),
        r"workload.mode: data-parallel averages the weights of MLPClassifier only .*use replicas, cv or search",
        id="data-parallel-on-an-svc",
    ),
    pytest.param(
        workload(estimator=FOREST, mode="data-parallel"),
        r"workload.mode: data-parallel averages the weights of MLPClassifier only .*use replicas, cv or search, or "
        r"add spark-mllib to engines \(it trains Spark ML's pyspark.ml.classification.RandomForestClassifier",
        id="data-parallel-on-a-forest-without-spark-mllib",
    ),
    pytest.param(
        {**workload(estimator="sklearn.svm.SVC", mode="data-parallel"), "engines": ["spark", "spark-mllib"]},
        r"engines: 'spark-mllib' trains Spark ML's own counterparts of MLPClassifier, LogisticRegression, "
        r"RandomForestClassifier, GradientBoostingClassifier, HistGradientBoostingClassifier, LinearRegression, "
        r"RandomForestRegressor only; sklearn.svm.SVC has none: leave spark-mllib out of engines",
        id="spark-mllib-on-an-svc",
    ),
    pytest.param(
        {**workload(estimator=FOREST), "engines": ["spark", "spark-mllib"]},
        r"engines: 'spark-mllib' trains one model per measurement: add data-parallel to workload.mode",
        id="spark-mllib-on-a-forest-without-data-parallel",
    ),
    pytest.param(
        {
            **workload(estimator=FOREST, mode="data-parallel", model={"min_weight_fraction_leaf": 0.1}),
            "engines": ["spark-mllib"],
        },
        r"workload.model.min_weight_fraction_leaf: has no counterpart in Spark ML's "
        r"pyspark.ml.classification.RandomForestClassifier \(spark-mllib maps n_estimators, max_depth, .*\): leave "
        r"it out, or leave spark-mllib out of engines",
        id="spark-mllib-parameter-without-a-counterpart",
    ),
    pytest.param(
        {
            **workload(
                estimator=FOREST, mode="data-parallel", iterations={"parameter": "min_samples_split", "values": [2, 4]}
            ),
            "engines": ["spark-mllib"],
        },
        r"workload.iterations.parameter: has no counterpart in Spark ML's "
        r"pyspark.ml.classification.RandomForestClassifier",
        id="spark-mllib-work-axis-without-a-counterpart",
    ),
    pytest.param(
        {
            **workload(
                dataset="diabetes",
                estimator="sklearn.ensemble.RandomForestRegressor",
                mode="data-parallel",
                model={"criterion": "absolute_error"},
            ),
            "engines": ["spark-mllib"],
        },
        r"workload.model.criterion: criterion 'absolute_error' has no Spark ML impurity \(mapped: squared_error\)",
        id="spark-mllib-value-without-a-counterpart",
    ),
    pytest.param(
        {
            **workload(estimator="sklearn.ensemble.GradientBoostingClassifier", mode="data-parallel"),
            "engines": ["spark-mllib"],
        },
        r"workload.dataset: digits has ten classes, and Spark ML's pyspark.ml.classification.GBTClassifier "
        r"\(gradient-boosted trees\) takes two only",
        id="spark-mllib-boosting-on-ten-classes",
    ),
    pytest.param(
        {
            **workload(
                estimator="sklearn.linear_model.LogisticRegression", mode="data-parallel", scoring="balanced_accuracy"
            ),
            "engines": ["spark-mllib"],
        },
        r"workload.scoring: balanced_accuracy has no Spark ML evaluator \(spark-mllib scores by accuracy, ",
        id="spark-mllib-scorer-without-an-evaluator",
    ),
    pytest.param(
        workload(estimator=FOREST, scoring="acuracy"),
        r"workload.scoring: must be a scikit-learn scorer name .*got 'acuracy'; did you mean 'accuracy'\?",
        id="unknown-scorer",
    ),
    pytest.param(
        workload(dataset="diabetes", estimator=FOREST),
        r"workload.dataset: diabetes is a regression set \(a continuous target\): name a regressor",
        id="classifier-on-diabetes",
    ),
    pytest.param(
        workload(dataset="california_housing", estimator=FOREST),
        r"workload.dataset: california_housing is a regression set \(a continuous target\): name a regressor",
        id="classifier-on-california-housing",
    ),
    pytest.param(
        {**workload(estimator=FOREST), "exclude": [{"model.max_dept": 3}]},
        r"exclude\[0\].model.max_dept: unknown key 'model.max_dept'; did you mean 'model.max_depth'\?",
        id="rule-on-a-parameter-the-estimator-lacks",
    ),
]


@pytest.mark.parametrize(("content", "match"), REFUSED)
def test_an_estimator_the_sweeper_cannot_train_exits_2_naming_key_and_fix(
    content: Any, match: str, write_grid: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_grid(content)
    assert main(["plan", str(path)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert re.search(match, err), err
    assert "Traceback" not in err


def test_every_problem_of_an_estimator_is_listed_at_once(write_grid: Callable[..., Path]) -> None:
    grid = workload(
        estimator=FOREST,
        model={"max_depth": 0, "criterion": "x", "n_jobs": 4},
        iterations={"parameter": "n_estimators", "values": [0, 10]},
    )
    with pytest.raises(Exception) as caught:
        grid_file.load(write_grid(grid))
    keys = [problem.split(": ")[1] for problem in caught.value.problems]  # type: ignore[attr-defined]
    assert keys == [
        "workload.iterations.values[0]",
        "workload.model.n_jobs",
        "workload.model.max_depth",
        "workload.model.criterion",
    ]


def test_the_default_estimator_keeps_every_measurement_key(write_grid: Callable[..., Path]) -> None:
    """Naming MLPClassifier and epochs explicitly is today's grid: the same workload, the same keys."""
    today = grid_file.load(write_grid(workload(epochs=[5, 10])))
    named = grid_file.load(
        write_grid(
            workload(
                estimator="sklearn.neural_network.MLPClassifier",
                iterations={"parameter": "max_iter", "values": [5, 10]},
                scoring="accuracy",
            ),
            name="named.yaml",
        )
    )
    assert today.workload == named.workload
    assert today.workload.estimator == DEFAULT_ESTIMATOR
    plan = make_plan(today)
    launch = plan.launches[0]
    point = plan.points[launch.index][0]
    # (tests/test_plan_goldens.py pins the keys of the committed grids, which name no estimator)
    assert measurement_key(today, plan, launch, point, 0) == measurement_key(named, make_plan(named), launch, point, 0)


def test_exact_epochs_on_another_estimator_warns_that_only_an_mlp_reads_it(write_grid: Callable[..., Path]) -> None:
    grid = grid_file.load(write_grid(workload(estimator=FOREST, exact_epochs=True)))
    assert [w.split(": ", 1)[1] for w in grid.warnings] == [
        "workload.exact_epochs: only MLPClassifier's fits read it, not sklearn.ensemble.RandomForestClassifier's"
    ]


def test_a_forest_a_pipeline_and_a_regressor_read_as_their_estimators(write_grid: Callable[..., Path]) -> None:
    forest = grid_file.load(
        write_grid(workload(estimator=FOREST, iterations={"parameter": "n_estimators", "values": [10, 50]}))
    )
    assert forest.workload.estimator == Estimator((FOREST,), "classifier", "n_estimators", "accuracy")
    assert forest.workload.epochs == (10, 50)
    pipeline = grid_file.load(
        write_grid(
            workload(estimator=PIPELINE, epochs=[20], model={"logisticregression__C": [0.1, 1.0]}), name="p.yaml"
        )
    )
    assert pipeline.workload.estimator.work_parameter == "logisticregression__max_iter"
    assert dict(pipeline.workload.model_axes) == {"logisticregression__C": (0.1, 1.0)}
    ridge = grid_file.load(
        write_grid(workload(dataset="diabetes", estimator="sklearn.linear_model.Ridge"), name="r.yaml")
    )
    assert ridge.workload.estimator == Estimator(("sklearn.linear_model.Ridge",), "regressor", None, "r2")
    assert ridge.workload.epochs == (1,)  # no work axis: one value, set on no parameter


def test_an_estimator_changes_the_measurement_key(write_grid: Callable[..., Path]) -> None:
    today = grid_file.load(write_grid(workload(epochs=[5])))
    other = grid_file.load(
        write_grid(workload(estimator="sklearn.linear_model.LogisticRegression", epochs=[5]), name="lr.yaml")
    )
    plans = make_plan(today), make_plan(other)
    keys = [measurement_key(g, p, p.launches[0], p.points[0][0], 0) for g, p in zip((today, other), plans, strict=True)]
    assert keys[0] != keys[1]


def test_spark_mllib_trains_a_forests_data_parallel_points_and_the_joblib_engines_the_others(
    write_grid: Callable[..., Path],
) -> None:
    grid = grid_file.load(
        write_grid(
            {
                **workload(estimator=FOREST, mode=["replicas", "data-parallel"], model={"max_depth": 8},
                           iterations={"parameter": "n_estimators", "values": [5, 20]}),
                "engines": ["spark", "dask", "spark-mllib"],
            }
        )
    )  # fmt: skip
    plan = make_plan(grid)
    modes = {launch.engine: {point.mode for point in plan.points[launch.index]} for launch in plan.launches}
    assert modes == {
        "local": {"replicas"},
        "spark": {"replicas"},
        "dask": {"replicas"},
        "spark-mllib": {"data-parallel"},
    }

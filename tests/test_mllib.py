"""Spark ML fits (sweeper.launch.spark.mllib): the parameter mapping, then real fits on a local-cluster launch."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pytest

from sweeper.config.estimator import prototype
from sweeper.config.grid import CLASSIFIER, REGRESSOR, Dataset, Estimator
from sweeper.config.spark_ml import spark_params
from sweeper.launch.base import LaunchContext
from sweeper.launch.spark import mllib
from sweeper.launch.spark.session import driver_process, executor_processes
from sweeper.planning.plan import Launch
from sweeper.workload.data import Data, load
from sweeper.workload.tasks import FitTask
from tests.support import launches
from tests.support.leftovers import assert_no_launch_processes


def task(epochs: int, seed: int = 0, train_rows: np.ndarray | None = None, **params: Any) -> FitTask:
    return FitTask(
        params=tuple(params.items()),
        epochs=epochs,
        seed=seed,
        exact_epochs=False,
        threads_per_fit=1,
        train_rows=train_rows,
    )


# --- the parameter mapping, no cluster -------------------------------------------------------------------------------


def test_gd_takes_its_step_from_learning_rate_init_and_tol_from_the_params() -> None:
    params = mllib.mllib_params(
        task(20, seed=7, hidden_layer_sizes=[16], mllib_solver="gd", learning_rate_init=0.5, tol=1e-3), 64, 10
    )
    assert params == {
        "layers": [64, 16, 10],
        "maxIter": 20,
        "seed": 7,
        "solver": "gd",
        "stepSize": 0.5,
        "blockSize": 128,
        "tol": 1e-3,
    }


def test_batch_size_auto_keeps_mllibs_block_size_and_exact_epochs_disables_the_tolerance() -> None:
    exact = FitTask(
        params=(("batch_size", "auto"), ("tol", 0.1)), epochs=5, seed=0, exact_epochs=True, threads_per_fit=1
    )
    params = mllib.mllib_params(exact, 784, 3)
    assert (params["layers"], params["blockSize"], params["tol"]) == ([784, 100, 3], 128, 0.0)


def test_an_unknown_mllib_solver_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"mllib_solver must be one of l-bfgs, gd, got 'adam'"):
        mllib.mllib_params(task(5, mllib_solver="adam"), 64, 10)


def test_a_forest_and_logistic_regression_carry_their_parameters_over() -> None:
    forest = prototype(("sklearn.ensemble.RandomForestRegressor",)).get_params()
    mapped = spark_params(("sklearn.ensemble.RandomForestRegressor",), {**forest, "random_state": 1}, 400)
    assert (mapped["impurity"], mapped["featureSubsetStrategy"], mapped["maxDepth"]) == ("variance", "all", 30)
    hist = prototype(("sklearn.ensemble.HistGradientBoostingClassifier",)).get_params()
    boosted = spark_params(("sklearn.ensemble.HistGradientBoostingClassifier",), {**hist, "random_state": 0}, 400)
    assert boosted == {"seed": 0, "maxIter": 100, "stepSize": 0.1, "maxDepth": 5, "minInstancesPerNode": 20,
                       "subsamplingRate": 1.0}  # fmt: skip
    logistic = {**prototype(("sklearn.linear_model.LogisticRegression",)).get_params(), "penalty": None}
    assert spark_params(("sklearn.linear_model.LogisticRegression",), logistic, 400)["regParam"] == 0.0
    with pytest.raises(ValueError, match=r"criterion 'absolute_error' has no Spark ML impurity"):
        spark_params(
            ("sklearn.ensemble.RandomForestRegressor",),
            {**forest, "criterion": "absolute_error", "random_state": 0},
            400,
        )


def test_start_is_a_context_manager_over_the_spark_engine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Without a cluster: start() wraps whatever the registry's spark starter yields, and closes the cache."""
    from sweeper.launch import registry
    from sweeper.launch.base import Granted

    calls: list[str] = []

    class FakeSpark:
        def __init__(self) -> None:
            self.granted = Granted(3, 2, 512)
            self.staging_s = 0.0
            self.spark = None

        def abort(self, restart: bool = True) -> None:
            calls.append("abort")

    @contextlib.contextmanager
    def fake_start(launch: Launch, context: LaunchContext) -> Iterator[FakeSpark]:
        calls.append(f"start {launch.manager}")
        yield FakeSpark()
        calls.append("stop")

    monkeypatch.setattr(registry, "starter", lambda engine, manager="local": fake_start)
    launch = launches.launch("spark", "yarn", nodes=2, cores_per_executor=2, executors=3, workers_per_node=(2, 1))
    context = launches.context(tmp_path, environment={})
    with mllib.start(launch, context) as session:
        assert (session.granted, session.partitions) == (Granted(3, 2, 512), 6)
        session.abort()
    assert calls == ["start yarn", "abort", "stop"]


# --- real fits on a local-cluster launch -----------------------------------------------------------------------------


class Started:
    """The module's launch; closing the stack tears it down (the last test does, and checks nothing is left)."""

    def __init__(self, session: mllib.MllibSession, stack: contextlib.ExitStack) -> None:
        self.session = session
        self.stack = stack
        driver = driver_process(session.spark)
        self.processes = [p for p in (driver, *executor_processes(session.spark)) if p is not None]


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Started]:
    launch = launches.launch("spark", executor_memory_mib=1024)
    context = launches.context(tmp_path_factory.mktemp("mllib"), start_timeout_s=180)
    with contextlib.ExitStack() as stack:
        session = stack.enter_context(mllib.start(launch, context))
        yield Started(session, stack)


@pytest.mark.integration
def test_lbfgs_on_digits_learns_across_both_executors(started: Started, digits: Data) -> None:
    session = started.session
    assert (session.granted.executors, session.granted.cores_per_executor, session.partitions) == (2, 1, 2)
    [result] = session.run_batch([task(50, hidden_layer_sizes=(32,))], digits)
    assert result.accuracy > 0.85
    assert 1 <= result.epochs_run <= 50
    assert result.converged == (result.epochs_run < 50)
    assert result.fit_s > 0
    assert result.pid == os.getpid()


@pytest.mark.integration
def test_the_data_is_cached_once_in_one_partition_per_core_and_reused(started: Started, digits: Data) -> None:
    session = started.session
    quick = [task(2, hidden_layer_sizes=(8,))]
    session.run_batch(quick, digits)
    first = session.cache.current
    assert first is not None
    session.run_batch(quick, digits)
    train, test = first
    again = session.cache.current
    assert again is not None and again[0] is train and again[1] is test  # not rebuilt: the same DataFrames
    assert train.is_cached and test.is_cached
    assert train.rdd.getNumPartitions() == 2
    assert train.count() == digits.n_train
    assert sorted(row["label"] for row in train.select("label").distinct().collect()) == list(range(10))

    # Other data replaces the cached frames and unpersists the old ones.
    half = load(Dataset("digits"), fraction=0.5)
    session.run_batch(quick, half)
    assert session.cache.current is not None and session.cache.current[0] is not train
    assert not train.is_cached and not train.storageLevel.useMemory


@pytest.mark.integration
def test_gd_with_mllibs_default_step_runs_but_stays_near_chance(started: Started, digits: Data) -> None:
    [result] = started.session.run_batch([task(10, hidden_layer_sizes=(100, 50), mllib_solver="gd")], digits)
    # Full-batch gradient descent, step 0.03, 10 updates of a sigmoid network: still predicting one class.
    assert 0.0 <= result.accuracy < 0.3
    assert (result.epochs_run, result.converged) == (10, False)


@pytest.mark.integration
def test_a_fold_trains_on_its_rows_only(started: Started, digits: Data) -> None:
    rows = np.arange(0, digits.n_train, 2)
    [result] = started.session.run_batch([task(20, train_rows=rows, hidden_layer_sizes=(16,))], digits)
    assert 0.5 < result.accuracy <= 1.0


FOREST = Estimator(("sklearn.ensemble.RandomForestClassifier",), CLASSIFIER, "n_estimators", "accuracy")


@pytest.mark.integration
def test_a_random_forest_trains_as_spark_mls_own_on_its_trees(started: Started, digits: Data) -> None:
    forest = replace(task(12, max_depth=8), estimator=FOREST)
    [result] = started.session.run_batch([forest], digits)
    assert result.accuracy > 0.8 and result.epochs_run == 12  # every tree grown
    gradient_boosting = replace(
        forest, estimator=replace(FOREST, steps=("sklearn.ensemble.GradientBoostingClassifier",))
    )
    with pytest.raises(ValueError, match=r"GBTClassifier takes two classes only, and digits has 10"):
        started.session.run_batch([gradient_boosting], digits)


@pytest.mark.integration
def test_a_linear_regression_trains_on_the_targets_and_is_scored_by_r2(started: Started) -> None:
    diabetes = load(Dataset("diabetes"))
    linear = Estimator(("sklearn.linear_model.LinearRegression",), REGRESSOR, None, "r2")
    [result] = started.session.run_batch([replace(task(1), estimator=linear)], diabetes)
    train, _ = started.session.cache.current or (None, None)
    assert train is not None and train.agg({"label": "max"}).first()[0] == pytest.approx(diabetes.y_train.max())
    from sklearn.linear_model import LinearRegression

    own = LinearRegression().fit(diabetes.X_train, diabetes.y_train).score(diabetes.X_test, diabetes.y_test)
    assert result.accuracy == pytest.approx(own, abs=0.01)  # least squares on both: the same model, the same R^2
    assert result.epochs_run == 1  # no work axis: its one point, whatever iterations Spark's solver counts


@pytest.mark.integration
def test_closing_the_launch_leaves_no_process(started: Started) -> None:
    assert len(started.processes) == 3  # the driver JVM and two executor JVMs
    started.stack.close()
    _, alive = psutil.wait_procs(started.processes, timeout=30)
    assert not alive
    assert_no_launch_processes()

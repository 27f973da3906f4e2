"""One fit of any estimator as workers run it: a forest on n_estimators, a pipeline on max_iter, a regressor by r2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from sweeper import load_results
from sweeper.config.grid import Dataset, Estimator
from sweeper.errors import UserError
from sweeper.results.predict.forecast import work_axis_name
from sweeper.results.recommend import recommend
from sweeper.store.parquet import SCHEMA_VERSION
from sweeper.store.validity import INVALID, checked
from sweeper.workload.data import Data, check_available, load
from sweeper.workload.estimators import build
from sweeper.workload.fit import run_fit
from sweeper.workload.tasks import FitTask, make_batch
from tests.fixtures.make_fixture_store import STORE
from tests.support.batches import recipe_with

FOREST = Estimator(("sklearn.ensemble.RandomForestClassifier",), "classifier", "n_estimators", "accuracy")
PIPELINE = Estimator(
    ("sklearn.preprocessing.StandardScaler", "sklearn.linear_model.LogisticRegression"),
    "classifier",
    "logisticregression__max_iter",
    "accuracy",
)
BOOSTING = Estimator(("sklearn.ensemble.HistGradientBoostingRegressor",), "regressor", "max_iter", "r2")
RIDGE = Estimator(("sklearn.linear_model.Ridge",), "regressor", None, "r2")


@pytest.fixture(scope="module")
def diabetes() -> Data:
    return load(Dataset("diabetes"))


def batch(estimator: Estimator, data: Data, mode: str, work: int, params: dict[str, Any]) -> list[FitTask]:
    return make_batch(recipe_with(estimator=estimator), mode, params, work, 0, 2, labels=data.y_train)


def test_diabetes_is_a_regression_set_scaled_like_the_others(diabetes: Data) -> None:
    assert (diabetes.n_train + diabetes.n_test, diabetes.n_features) == (442, 10)
    assert diabetes.y_train.dtype == np.float64 and diabetes.X_train.dtype == np.float32
    assert diabetes.X_train.min() >= 0.0 and diabetes.X_train.max() <= 1.0
    half = load(Dataset("diabetes"), fraction=0.5)
    assert half.n_train == round(diabetes.n_train / 2) and half.n_test == diabetes.n_test


def test_a_forest_grows_the_trees_its_work_axis_asks_for(digits: Data) -> None:
    results = [run_fit(task, digits) for task in batch(FOREST, digits, "replicas", 10, {"max_depth": 8})]
    assert [r.epochs_run for r in results] == [10, 10]  # no n_iter_: the work it was given
    assert all(0.8 < r.accuracy <= 1.0 and not r.converged for r in results)
    model = build(FOREST, {"max_depth": 8}, 10, 7, exact_epochs=False)
    assert model.get_params()["n_estimators"] == 10 and model.get_params()["random_state"] == 7


def test_a_pipeline_sets_its_steps_parameters_and_reports_its_last_steps_iterations(digits: Data) -> None:
    params = {"logisticregression__C": 0.5}
    model = build(PIPELINE, params, 15, 3, exact_epochs=False)
    assert [name for name, _ in model.steps] == ["standardscaler", "logisticregression"]
    chosen = model.get_params()
    assert (chosen["logisticregression__C"], chosen["logisticregression__max_iter"]) == (0.5, 15)
    assert chosen["logisticregression__random_state"] == 3
    result = run_fit(batch(PIPELINE, digits, "replicas", 15, params)[0], digits)
    assert 1 <= result.epochs_run <= 15 and 0.9 < result.accuracy <= 1.0


def test_a_regressor_is_scored_by_r2_on_unstratified_folds(diabetes: Data) -> None:
    tasks = batch(BOOSTING, diabetes, "cv", 20, {"learning_rate": 0.1})
    held_out = [set(range(diabetes.n_train)) - set(task.train_rows.tolist()) for task in tasks]  # type: ignore[union-attr]
    assert set().union(*held_out) == set(range(diabetes.n_train))  # KFold: every row held out once
    results = [run_fit(task, diabetes) for task in tasks]
    assert all(-1.0 < r.accuracy < 1.0 and r.epochs_run <= 20 for r in results)


def test_an_estimator_without_a_work_axis_trains_once_as_configured(diabetes: Data) -> None:
    model = build(RIDGE, {"alpha": 2.0}, 1, 0, exact_epochs=False)
    assert model.get_params()["alpha"] == 2.0
    result = run_fit(batch(RIDGE, diabetes, "replicas", 1, {"alpha": 2.0})[0], diabetes)
    assert 0.2 < result.accuracy < 1.0 and result.epochs_run == 1


def test_another_scorer_may_record_a_negative_score_which_the_store_keeps() -> None:
    rows = pd.DataFrame(
        {
            "status": ["ok", "ok", "ok"],
            "error": [None, None, None],
            "accuracy": [-0.4, -0.4, 1.5],
            "scoring": ["r2", None, "accuracy"],
        }
    )
    assert checked(rows)["status"].tolist() == ["ok", INVALID, INVALID]  # null: accuracy (stores before scorers)


def test_a_store_from_before_estimators_reads_as_the_mlp_on_max_iter_by_accuracy() -> None:
    frame = load_results(STORE)
    assert frame["schema_version"].max() < SCHEMA_VERSION
    assert frame[["estimator", "work_axis", "scoring"]].isna().all().all()  # null: MLPClassifier, max_iter, accuracy
    assert set(frame["status"]) - {"failed", "timeout", "pruned"} == {"ok"}  # no score refused by the scorer check
    assert recommend(frame).score == "accuracy"


def test_predict_names_the_work_axis_its_rows_hold() -> None:
    forest = pd.DataFrame({"estimator": [FOREST.name] * 2, "work_axis": ["n_estimators"] * 2})
    assert work_axis_name(forest) == "n_estimators"
    mlp = forest.assign(estimator="sklearn.neural_network.MLPClassifier", work_axis="max_iter")
    assert work_axis_name(mlp) == work_axis_name(forest.assign(estimator=None, work_axis=None)) == "epochs"
    assert work_axis_name(pd.concat([forest, mlp])) == "epochs"  # two axes in one frame: the column's own name


def test_california_housing_is_read_from_scikit_learns_cache_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No network here: an empty cache names the fix; then a cache built in tmp_path, a stand-in for the download
    (diabetes' real rows, shaped as scikit-learn caches California housing: the target in dollars, 8 features)."""
    import joblib
    from sklearn.datasets import load_diabetes

    monkeypatch.setenv("SCIKIT_LEARN_DATA", str(tmp_path))
    missing = r"california_housing is not in scikit-learn's cache \(.*cal_housing_py3.pkz does not exist\): fetch it"
    with pytest.raises(UserError, match=missing):
        check_available(Dataset("california_housing"))
    real = load_diabetes()
    features = real.data[:, :8] - real.data[:, :8].min(axis=0) + 1.0  # positive: sklearn divides by two columns
    joblib.dump(np.column_stack([real.target * 1000, features]), tmp_path / "cal_housing_py3.pkz", compress=6)
    check_available(Dataset("california_housing"))
    data = load(Dataset("california_housing"))
    assert (data.n_train + data.n_test, data.n_features, data.name) == (442, 8, "california_housing")
    assert data.y_train.dtype == np.float64 and data.X_train.min() >= 0.0 and data.X_train.max() <= 1.0
    assert sorted(np.concatenate([data.y_train, data.y_test])) == pytest.approx(sorted(real.target / 100))
    (tmp_path / "cal_housing_py3.pkz").write_bytes(b"not a cache")
    with pytest.raises(UserError, match=r"cal_housing_py3.pkz cannot be read as California housing .*fetch it again"):
        load(Dataset("california_housing"))

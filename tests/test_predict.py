"""What-if predictions (``sweeper predict``, :mod:`sweeper.results.predict`) on stores drawn from a known law.

The law (tests/support/whatif_stores.py) is the structure of the work with 4 % noise per fit and per batch:
held-out shapes and a 4x larger cluster must be predicted within 10 % of its true medians; a store with a
step at a memory limit, which no such model follows, must show a large held-out error and name nothing.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sweeper.cli import main as sweeper_main
from sweeper.config import load as grid_file
from sweeper.planning.plan import make_plan
from sweeper.results.predict import validation as validation_module
from sweeper.results.predict.forecast import Prediction, learn, planned_cost, predicted_targets
from sweeper.results.predict.view import prediction_rows
from sweeper.results.predict.worth import worth_measuring
from sweeper.results.recommend import recommend
from sweeper.results.recommend_view import lines
from tests.conftest import minimal_grid
from tests.support.budget_stores import frame, write_store
from tests.support.whatif_stores import DASK, SPARK, law_rows, shape

LAWS = {"spark": SPARK, "dask": DASK}


@pytest.fixture(scope="module")
def law_store() -> Any:
    return frame(law_rows(LAWS))


@pytest.mark.parametrize("engine", ["spark", "dask"])
def test_held_out_configurations_are_predicted_within_the_noise(law_store: Any, engine: str) -> None:
    validation = learn(law_store).validation
    assert len(validation.errors(engine)) == 12  # 4 configurations x 3 epochs, each from the other 3
    assert (validation.median_error(engine) or 1) <= 0.04 and (validation.max_error(engine) or 1) <= 0.10
    assert validation.trusted(engine)


@pytest.mark.parametrize("engine", ["spark", "dask"])
@pytest.mark.parametrize(
    ("cores", "executors", "nodes", "n_fits"),
    [(6, 2, 2, 24), (2, 24, 8, 24), (2, 24, 8, 96), (1, 48, 8, 96)],
    ids=["untested-shape", "4x-cluster", "4x-cluster-4x-fits", "4x-cluster-1-core"],
)
def test_untested_shapes_and_a_4x_cluster_are_predicted_within_10_percent(
    law_store: Any, engine: str, cores: int, executors: int, nodes: int, n_fits: int
) -> None:
    learned = learn(law_store)
    errors = []
    for epochs in (10, 100, 1000):
        target = shape(engine, cores, executors, epochs, nodes=nodes, n_fits=n_fits)
        prediction = learned.predict(target)
        truth = LAWS[engine].median_s(target)
        errors.append(abs(prediction.predicted_s / truth - 1))
        assert prediction.extrapolated  # more executors, slots or cores than measured: said so
        assert prediction.interval_s is not None and prediction.interval_s[0] <= truth <= prediction.interval_s[1]
    assert max(errors) <= 0.10, errors


def test_the_memory_peak_is_predicted_and_a_shape_that_would_not_fit_is_flagged(law_store: Any) -> None:
    learned = learn(law_store)
    roomy = learned.predict(shape("dask", 4, 3, 100))
    cramped = learned.predict(replace(shape("dask", 4, 3, 100), executor_memory_gib=0.5))
    expected = DASK.base_gib + DASK.per_fit_gib * 4  # 4 fits at once on a 4-core worker
    assert roomy.peak_gib == pytest.approx(expected, rel=0.05)
    assert roomy.fits_memory is True and cramped.fits_memory is False


def test_a_prediction_without_a_validated_interval_prints_no_number() -> None:
    validated = Prediction(shape("dask", 4, 3, 100), 10.4, (9.8, 11.0), (), None)
    unvalidated = replace(validated, interval_s=None)  # its engine's model could not be validated
    cells = prediction_rows([validated, unvalidated])
    assert cells[0][4:6] == ["10.4 s", "9.8-11 s"]
    assert cells[1][4:6] == ["not validated", "-"] and not any("10.4" in cell for cell in cells[1])


def test_a_step_at_a_memory_limit_shows_a_large_held_out_error_and_names_nothing() -> None:
    """4 GiB executors: 1.33 and 1 GiB per concurrent fit at 3 and 4 cores, below the 1.5 GiB step (3x slower)."""
    laws = {engine: replace(law, step_gib=1.5) for engine, law in LAWS.items()}
    df = frame(law_rows(laws, memory_gib=4.0))
    validation = learn(df).validation
    for engine in laws:
        assert (validation.median_error(engine) or 0) > 0.40 and not validation.trusted(engine)
    assert worth_measuring(df) == []
    assert not [line for line in lines(recommend(df), worth_measuring(df)) if "Worth measuring" in line]


def test_recommend_names_a_faster_untested_shape_where_the_model_validates() -> None:
    """Dask without contention but 1 s per executor: fewer, bigger workers are faster than any measured."""
    laws = {"spark": SPARK, "dask": replace(DASK, contention=0.0, per_executor_s=1.0)}
    df = frame(law_rows(laws))
    found = worth_measuring(df)
    assert [(w.shape.engine, w.shape.executors, w.shape.cores_per_executor) for w in found] == [("dask", 1, 12)] * 3
    for worth in found:
        truth = laws["dask"].median_s(worth.shape)
        assert truth < worth.measured_best_s  # it is faster indeed
        assert worth.predicted_s == pytest.approx(truth, rel=0.10)
    text = lines(recommend(df), found)
    at = text.index(next(line for line in text if line.startswith("Worth measuring next")))
    assert text[at + 1].startswith("  10 epochs: dask 1 x 12 cores (24 GiB): predicted ")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``sweeper predict ARGV`` in this process: its exit code, stdout and stderr."""
    code = sweeper_main(["predict", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def predict_grid() -> dict[str, Any]:
    """One node of 13 cores, 1 reserved: 6 executors x 2 cores and 2 x 6, 24 fits, epochs 10 and 100."""
    return minimal_grid(
        cluster={"manager": "local", "nodes": 1, "cores_per_node": 13, "memory_per_node": "64GiB"},
        sizing={"cores_per_executor": [2, 6], "reserve": {"cores": 1, "memory": "1GiB"}, "application_master": 0},
        workload={"dataset": "digits", "epochs": [10, 100], "trials": 1, "n_fits": 24},
    )


def test_predict_prints_the_model_its_validation_and_every_launch(
    tmp_path: Path, write_grid: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    store = write_store(tmp_path / "store", law_rows(LAWS))
    grid = write_grid(predict_grid())
    code, out, err = run(capsys, str(store), "--grid", str(grid), "--json")
    assert code == 0, err
    document = json.loads(out)
    predictions = document["predictions"]
    assert len(predictions) == 2 * 2 * 2  # engines x shapes x epochs
    assert {(p["engine"], p["executors"], p["cores_per_executor"], p["epochs"]) for p in predictions} == {
        (engine, executors, cores, epochs)
        for engine in ("spark", "dask")
        for executors, cores in ((6, 2), (2, 6))
        for epochs in (10, 100)
    }
    for p in predictions:
        assert p["interval_s"][0] < p["predicted_median_s"] < p["interval_s"][1]
        assert p["n_fits"] == 24 and p["n_train"] == 1347
        assert p["extrapolated"] and "nodes" in p["extrapolated_on"]  # measured on 2 nodes, asked on 1
    assert document["validation"]["n_held_out"] == 24
    assert document["validation"]["held_out_median_rel_error"] <= 0.04
    assert set(document["models"]) == {"spark", "dask"}
    code, out, err = run(capsys, str(store), "--grid", str(grid))
    assert code == 0, err
    assert "dask: one fit = " in out and "each configuration predicted from the others" in out
    assert "predicted median batch times of" in out
    code, out, err = run(capsys, str(store), "--validate")
    assert code == 0, err
    assert out.splitlines()[0].startswith("spark: each configuration predicted from the others")
    assert "one fit" not in out


def test_predict_refuses_what_it_cannot_answer_with_exit_2(
    tmp_path: Path, write_grid: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    store = write_store(tmp_path / "store", law_rows(LAWS))
    code, _, err = run(capsys, str(store))
    assert code == 2 and "pass --grid GRID" in err
    other = predict_grid()
    other["workload"] = {**other["workload"], "dataset": "fashion-mnist"}
    code, _, err = run(capsys, str(store), "--grid", str(write_grid(other, "other.yaml")))
    assert code == 2 and "not fashion-mnist" in err, err
    code, _, err = run(capsys, str(store), "--grid", str(write_grid("cluster: [", "bad.yaml")))
    assert code == 2 and "bad.yaml" in err, err
    code, _, err = run(capsys, str(tmp_path / "nowhere"), "--validate")
    assert code == 2 and "no such store" in " ".join(err.split()), err  # wrapped at 100 columns


def test_a_grid_with_more_pairs_than_predict_prints_is_refused_with_exit_2(
    tmp_path: Path, write_grid: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """12 launches (2 engines x 6 shapes) x 1,000 epochs values: 12,000 launch x point pairs, over MAX_PREDICTIONS
    (10,000)."""
    store = write_store(tmp_path / "store", law_rows(LAWS))
    grid = predict_grid()
    grid["sizing"] = {**grid["sizing"], "cores_per_executor": [1, 2, 3, 4, 6, 12]}
    grid["workload"] = {**grid["workload"], "epochs": list(range(1, 1001))}
    code, out, err = run(capsys, str(store), "--grid", str(write_grid(grid)))
    said = " ".join(err.split())  # its lines unwrapped
    assert code == 2 and "12,000 Spark and Dask launch x replicas point pairs" in said and "at most 10,000" in said, err
    assert "Traceback" not in err and not out


def test_many_configurations_are_held_out_in_folds_never_predicted_from_themselves(
    monkeypatch: pytest.MonkeyPatch, law_store: Any
) -> None:
    """With fewer folds than configurations, each configuration is still predicted from a model that never saw
    it: one configuration 3x slower than the law is predicted near the law (a large error), as without folds."""
    slow = law_store.copy()
    one = (slow["engine"] == "dask") & (slow["cores_per_executor"] == 2)
    slow.loc[one, "fit_wall_s"] = slow.loc[one, "fit_wall_s"] * 3
    unfolded = learn(slow).validation
    monkeypatch.setattr(validation_module, "MAX_FOLDS", 2)
    folded = learn(slow).validation
    for validation in (unfolded, folded):
        errors = {(h.configuration, h.epochs): h.relative_error for h in validation.held_out if h.engine == "dask"}
        assert len(errors) == 12
        slowest = [error for (configuration, _), error in errors.items() if " x 2 cores" in configuration]
        assert len(slowest) == 3 and min(slowest) > 0.5, errors


def test_plan_predicts_each_launch_and_the_sweeps_cluster_time(
    tmp_path: Path, write_grid: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """4 launches of 1 node (2 engines x 2 shapes), 2 epochs, 1 trial; the law store's launches start, warm up and
    tear down in 20 + 2 + 2 s."""
    store = write_store(tmp_path / "store", law_rows(LAWS))
    learned = learn(frame(law_rows(LAWS)))
    assert learned.launch_overhead_s == {"spark": 24.0, "dask": 24.0}
    grid = write_grid(predict_grid())
    code = sweeper_main(["plan", str(grid), "--predict-from", str(store)])
    out, err = capsys.readouterr()
    assert code == 0, err
    plan = make_plan(grid_file.load(grid))
    predictions = [learned.predict(shape) for _, _, shape in predicted_targets(learned, plan)]
    cost = planned_cost(learned, plan)
    assert cost.starts_node_s == 4 * 24.0
    assert cost.batches_node_s == pytest.approx(sum(p.predicted_s for p in predictions))
    assert f"Predicted cluster time: {cost.total_node_s:,.0f} node-seconds" in out
    assert "each configuration predicted from the others" in " ".join(out.split())
    assert max(map(len, out.splitlines())) <= 100, out  # a pipe's width (#35)


def test_a_launch_is_predicted_to_start_as_a_warm_node_does_not_as_the_first() -> None:
    """2 shapes per engine; each engine's first launch started in 60 s (YARN localizing its jars and environment on
    the nodes), the other in 8 s: a launch costs 8 + 2 + 2 s (the median of the first starts would be 34 + 4 s)."""
    df = frame(law_rows(LAWS, shapes=[(2, 6), (4, 3)]))
    first = df["launch_index"].isin([0, 2])  # launches 0, 1: spark's shapes; 2, 3: dask's
    df["cluster_start_s"] = np.where(first, 60.0, 8.0)
    assert learn(df).launch_overhead_s == {"spark": 12.0, "dask": 12.0}


def test_one_measured_epochs_value_keeps_contention_and_flags_other_epochs() -> None:
    """One work value cannot tell a fit's fixed cost from its work: the fit's contention between fits sharing an
    executor must still come through (a 12-core Dask worker runs 12 fits at once), and other epochs are beyond it."""
    df = frame(law_rows({"dask": DASK}, epochs=(100,)))
    learned = learn(df)
    crowded = shape("dask", 12, 1, 100)
    assert learned.predict(crowded).predicted_s == pytest.approx(DASK.median_s(crowded), rel=0.10)
    assert "epochs" in learned.predict(shape("dask", 2, 6, 1000)).extrapolated_on
    for worth in worth_measuring(df):  # anything named is faster indeed
        assert DASK.median_s(worth.shape) < worth.measured_best_s

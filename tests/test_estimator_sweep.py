"""A user's own model swept end to end: a random forest on ``n_estimators`` through the command line, on the
local baseline, a real Spark and a real Dask launch; the answer and the report read its store."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from sweeper import load_results
from tests.conftest import minimal_grid, run_cli

pytestmark = pytest.mark.integration

FOREST = "sklearn.ensemble.RandomForestClassifier"


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """1 configuration (Spark and Dask, 2 x 1 core) and the baseline, n_estimators 5 and 20, 2 trials."""
    tmp = tmp_path_factory.mktemp("forest")
    grid = minimal_grid(name="forest", store=str(tmp / "store"))
    grid["workload"] = {
        "dataset": "digits",
        "estimator": FOREST,
        "model": {"max_depth": 8},
        "iterations": {"parameter": "n_estimators", "values": [5, 20]},
        "trials": 2,
    }
    path = tmp / "forest.yaml"
    path.write_text(yaml.safe_dump(grid))
    return tmp / "store", run_cli("run", str(path))


def test_a_forest_sweep_records_its_estimator_parameters_and_axis_by_name(
    swept: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    store, result = swept
    assert result.returncode == 0, result.stdout + result.stderr
    frame = load_results(store)
    assert set(frame["status"]) == {"ok"}, frame[["engine", "error"]]
    assert frame.groupby(["engine", "epochs"]).size().to_dict() == {
        (engine, trees): 2 for engine in ("dask", "local", "spark") for trees in (5, 20)
    }
    assert set(frame["estimator"]) == {FOREST}
    assert set(frame["work_axis"]) == {"n_estimators"} and set(frame["scoring"]) == {"accuracy"}
    assert set(frame["model_params"]) == {'{"max_depth": 8}'}
    assert (frame["epochs_run"] == frame["epochs"]).all()  # a forest grows every tree it is asked for
    assert (frame["accuracy"] > 0.7).all()


def test_recommend_and_the_report_read_a_forest_store(
    swept: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    store, _ = swept
    answer = run_cli("recommend", str(store))
    assert answer.returncode == 0, answer.stderr
    assert "Overall:" in answer.stdout
    report = run_cli("report", str(store), "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stderr
    assert any((tmp_path / "report").iterdir())

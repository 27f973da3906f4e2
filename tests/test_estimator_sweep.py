"""A user's own model swept end to end: a random forest on ``n_estimators`` through the command line, on the
local baseline, a real Spark and a real Dask launch; the answer and the report read its store."""

from __future__ import annotations

import json
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
    return tmp / "store", run_cli("run", str(path), columns=120)  # the summary table at its full width


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


def test_the_runs_lines_and_summary_name_its_work_axis(swept: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    _, result = swept
    said = " ".join(result.stdout.split())  # its lines unwrapped
    assert "2 GiB n_estimators 20 trial 1 fit " in said and "┃ n_estimators ┃" in said, result.stdout  # the summary's
    assert "epochs" not in said, result.stdout


def test_recommend_and_the_report_read_a_forest_store(
    swept: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    store, _ = swept
    answer = run_cli("recommend", str(store))
    assert answer.returncode == 0, answer.stderr
    assert "Overall:" in answer.stdout and "per n_estimators value:" in answer.stdout
    assert "epochs" not in answer.stdout and max(map(len, answer.stdout.splitlines())) <= 100
    report = run_cli("report", str(store), "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stderr
    markdown = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "| n\\_estimators |" in markdown and "The recommendation per n\\_estimators value" in markdown
    assert "Epochs" not in markdown, [line for line in markdown.splitlines() if "Epochs" in line]


def test_predict_names_the_work_axis_of_a_forest_store(swept: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    store, _ = swept
    validated = run_cli("predict", str(store), "--validate")
    assert validated.returncode == 0, validated.stderr
    assert "not validated: fewer than" in validated.stdout  # one configuration per engine: none held out
    predicted = run_cli("predict", str(store), "--grid", str(store.parent / "forest.yaml"), columns=200)
    assert predicted.returncode == 0, predicted.stderr
    assert "x n_estimators x rows/1e6" in predicted.stdout and "┃ n_estimators ┃" in predicted.stdout
    assert "epochs" not in predicted.stdout, predicted.stdout


def test_replay_reads_a_forest_store(swept: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    store, _ = swept
    replayed = run_cli("replay", str(store), "--strategy", "grid", "--repeats", "20", "--json")
    assert replayed.returncode == 0, replayed.stderr
    document = json.loads(replayed.stdout)
    assert (document["rungs"], document["configurations"], document["repeats"]) == ([5, 20], 2, 20)
    assert document["full_grid_best"].startswith(("spark 2 executors", "dask 2 executors"))

"""A user's own model swept end to end through the command line, on the local baseline, a real Spark and a real
Dask launch: a random forest on ``n_estimators``, and a regressor that is a pipeline (StandardScaler, then Ridge
on ``max_iter``, scored by R^2 on scikit-learn's diabetes). Two sweeps, three families (a forest, a pipeline, a
regressor); every test runs on both stores: rows, the run's lines, the answer, the report, predict and replay.

Neither is swept on spark-mllib: it needs data-parallel points, which a pipeline cannot take (Spark ML has no
counterpart of one), and a forest's Spark ML fit is tested on a real launch by tests/test_mllib.py.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from sweeper import load_results
from sweeper.cli import main
from tests.conftest import REPO, minimal_grid, run_cli

pytestmark = pytest.mark.integration

FOREST = "sklearn.ensemble.RandomForestClassifier"
Cli = Callable[..., str]  # argv (and columns=) -> stdout
SCALED_RIDGE = ["sklearn.preprocessing.StandardScaler", "sklearn.linear_model.Ridge"]


@dataclass(frozen=True)
class Family:
    """What a family's sweep must record and show: its estimator, the work axis (as rows and views name it), the
    score and its floor."""

    name: str
    estimator: str  # as rows record it (a pipeline's steps joined by ' + ')
    work_axis: str  # as rows record it (a pipeline's step__parameter)
    axis: str  # as views name it
    values: tuple[int, int]
    model_params: str
    scoring: str
    score_floor: float


FAMILIES = {
    "forest": Family("forest", FOREST, "n_estimators", "n_estimators", (5, 20), '{"max_depth": 8}', "accuracy", 0.7),
    "regressor": Family(
        "regressor", " + ".join(SCALED_RIDGE), "ridge__max_iter", "max_iter", (5, 20), '{"ridge__solver": "saga"}',
        "r2", 0.2,
    ),
}  # fmt: skip


@dataclass(frozen=True)
class Swept:
    """A family's sweep: its store, grid file and the ``sweeper run`` that made it."""

    family: Family
    store: Path
    grid: Path
    run: subprocess.CompletedProcess[str]


def sweep(tmp: Path, family: Family, grid: dict[str, Any]) -> Swept:
    """``sweeper run`` of ``grid`` into ``tmp``, 100 columns as a pipe gets (under pytest, importing readline leaves
    COLUMNS=80 in the environment a subprocess inherits, though not in os.environ)."""
    grid["store"] = str(tmp / "store")
    path = tmp / f"{family.name}.yaml"
    path.write_text(yaml.safe_dump(grid))
    return Swept(family, tmp / "store", path, run_cli("run", str(path), "--report", str(tmp / "report"), columns=100))


@pytest.fixture(scope="module")
def forest(tmp_path_factory: pytest.TempPathFactory) -> Swept:
    """1 configuration (Spark and Dask, 2 x 1 core) and the baseline, n_estimators 5 and 20, 2 trials."""
    grid = minimal_grid(name="forest")
    grid["workload"] = {
        "dataset": "digits",
        "estimator": FOREST,
        "model": {"max_depth": 8},
        "iterations": {"parameter": "n_estimators", "values": [5, 20]},
        "trials": 2,
    }
    return sweep(tmp_path_factory.mktemp("forest"), FAMILIES["forest"], grid)


@pytest.fixture(scope="module")
def regressor(tmp_path_factory: pytest.TempPathFactory) -> Swept:
    """grids/regressor.yaml shrunk to 1 configuration (2 x 1 core), its model a pipeline (StandardScaler, Ridge by
    saga), max_iter 5 and 20, 2 fits, 2 trials."""
    grid = yaml.safe_load((REPO / "grids" / "regressor.yaml").read_text())
    grid["sizing"]["cores_per_executor"] = [1]
    grid["workload"].update(
        estimator=SCALED_RIDGE,
        model={"ridge__solver": "saga"},  # an iterative solver: max_iter is its work
        iterations={"parameter": "max_iter", "values": [5, 20]},  # the pipeline's ridge__max_iter
        n_fits=2,
        trials=2,
    )
    return sweep(tmp_path_factory.mktemp("regressor"), FAMILIES["regressor"], grid)


@pytest.fixture(params=list(FAMILIES))
def swept(request: pytest.FixtureRequest) -> Swept:
    """Each family's sweep in turn."""
    found: Swept = request.getfixturevalue(request.param)
    assert found.run.returncode == 0, found.run.stdout + found.run.stderr
    return found


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    """The command line in-process (the imports paid once): its output, after asserting exit 0."""

    def run(*argv: str, columns: int | None = None) -> str:  # columns: a terminal's width (None: a pipe)
        if columns is None:
            monkeypatch.delenv("COLUMNS", raising=False)
        else:
            monkeypatch.setenv("COLUMNS", str(columns))
        code = main(list(argv))
        out, err = capsys.readouterr()
        assert code == 0, out + err
        return out

    return run


def test_a_sweep_records_its_estimator_parameters_axis_and_score_by_name(swept: Swept) -> None:
    family = swept.family
    frame = load_results(swept.store)
    assert set(frame["status"]) == {"ok"}, frame[["engine", "error"]]
    assert frame.groupby(["engine", "epochs"]).size().to_dict() == {
        (engine, value): 2 for engine in ("dask", "local", "spark") for value in family.values
    }
    assert set(frame["estimator"]) == {family.estimator} and set(frame["work_axis"]) == {family.work_axis}
    assert set(frame["scoring"]) == {family.scoring} and set(frame["model_params"]) == {family.model_params}
    assert (frame["epochs_run"] == frame["epochs"]).all()  # a forest grows every tree; saga runs every iteration
    assert (frame["accuracy"] > family.score_floor).all(), frame["accuracy"]  # the score column: accuracy, or R^2
    assert frame.groupby(["epochs", "trial"])["accuracy"].nunique().eq(1).all()  # the same fits on every engine


def test_the_runs_lines_and_summary_name_its_work_axis_and_score(swept: Swept) -> None:
    said = " ".join(swept.run.stdout.split())  # its lines unwrapped
    axis, score = swept.family.axis, swept.family.scoring
    assert f"2 GiB {axis} 20 trial 1 fit " in said and f"┃ {axis} ┃" in said, swept.run.stdout  # the summary's
    assert f" s {score[:3]} 0." in said and f"┃ {score} ┃" in said, swept.run.stdout  # acc 0.95, r2 0.35
    assert "epochs" not in said, swept.run.stdout


def test_recommend_and_the_report_read_its_store(swept: Swept, cli: Cli) -> None:
    axis = swept.family.axis
    answer = cli("recommend", str(swept.store))
    assert "Overall:" in answer and f"per {axis} value:" in answer
    assert "epochs" not in answer and max(map(len, answer.splitlines())) <= 100
    regressor = swept.family.scoring == "r2"
    assert ("Score (r2): cannot differ" if regressor else "Accuracy: cannot differ") in " ".join(answer.split())
    report = swept.store.parent / "report"  # sweeper run --report wrote it when the run ended
    assert f"report: {report / 'report.html'} (and report.md, figures beside it)" in " ".join(swept.run.stdout.split())
    markdown = (report / "report.md").read_text(encoding="utf-8")
    escaped = axis.replace("_", "\\_")
    assert f"| {escaped} |" in markdown and f"The recommendation per {escaped} value" in markdown
    assert ("| Score (r2) |" if regressor else "| Accuracy |") in markdown
    named = "Time and score (r2) per configuration" if regressor else "Time and accuracy per configuration"
    assert named in markdown
    assert "Epochs" not in markdown, [line for line in markdown.splitlines() if "Epochs" in line]


def test_predict_names_its_work_axis(swept: Swept, cli: Cli) -> None:
    validated = cli("predict", str(swept.store), "--validate")
    assert "not validated: fewer than" in validated  # one configuration per engine: none held out
    predicted = cli("predict", str(swept.store), "--grid", str(swept.grid), columns=200)  # a wide terminal
    axis = swept.family.axis
    assert f"x {axis} x rows/1e6" in predicted and f"┃ {axis} ┃" in predicted
    assert max(map(len, predicted.splitlines())) <= 100, predicted
    assert "epochs" not in predicted, predicted


def test_replay_reads_its_store(swept: Swept, cli: Cli) -> None:
    document = json.loads(cli("replay", str(swept.store), "--strategy", "grid", "--repeats", "20", "--json"))
    assert (document["rungs"], document["configurations"], document["repeats"]) == ([5, 20], 2, 20)
    assert document["full_grid_best"].startswith(("spark 2 executors", "dask 2 executors"))
    said = " ".join(cli("replay", str(swept.store), "--strategy", "grid", "--repeats", "20").split())
    assert f"{swept.family.axis} 5, 20" in said and "epochs" not in said, said

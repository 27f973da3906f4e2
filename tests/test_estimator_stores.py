"""``sweeper replay`` and ``sweeper predict`` on a regressor's store: gradient-boosted trees on ``max_iter``, scored
by R^2 (synthetic rows written as a sweep writes them, read back from Parquet by the real commands; the forest
sweep of tests/test_estimator_sweep.py runs them on a real store)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sweeper.cli import main
from tests.support.stored_rows import write_test_rows
from tests.support.synthetic_stores import ArmSpec, synthetic_rows

REGRESSOR = "sklearn.ensemble.HistGradientBoostingRegressor"
CLUSTER_MEDIANS_S = {("spark", 1): 12.0, ("spark", 2): 9.0, ("spark", 4): 8.0, ("dask", 1): 10.0, ("dask", 2): 11.0,
                     ("dask", 4): 14.0}  # (engine, cores per executor), 4 cores in all  # fmt: skip


def arm(engine: str, cores: int, executors: int, memory_gib: float, median_s: float) -> ArmSpec:
    return ArmSpec(engine, cores, executors, memory_gib, median_s=median_s, accuracy=0.45, accuracy_sd=0.01)  # R^2


ARMS = [
    *(arm(engine, cores, 4 // cores, 4.0, median_s) for (engine, cores), median_s in CLUSTER_MEDIANS_S.items()),
    arm("local", 1, 1, 0.0, 30.0),  # the baseline
]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """Three configurations per engine and the baseline at max_iter 50 and 200, R^2 about 0.45."""
    rows = synthetic_rows(ARMS, epochs=(50, 200), seed=3, sweep="regressor", dataset="diabetes")
    for row in rows:
        slower = (row["epochs"] / 50) ** 0.5  # more boosting iterations, longer fits
        row.update(estimator=REGRESSOR, work_axis="max_iter", scoring="r2", fit_wall_s=row["fit_wall_s"] * slower)
    write_test_rows(tmp_path / "store", "regressor", rows, "part-0")
    return tmp_path / "store"


def test_predict_learns_a_regressors_store_and_names_its_work_axis(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["predict", str(store), "--validate"]) == 0
    assert "each configuration predicted from the others: median error" in capsys.readouterr().out
    grid = str(Path(__file__).parents[1] / "grids" / "regressor.yaml")  # max_iter 50 and 200 on this machine
    assert main(["predict", str(store), "--grid", grid]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "x max_iter x rows/1e6" in said and "┃ max_iter ┃" in said and "epochs" not in said
    assert main(["predict", str(store), "--grid", grid, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert set(document["models"]) == {"spark", "dask"} and document["validation_by_engine"]["spark"]["n_held_out"]
    assert {p["epochs"] for p in document["predictions"]} == {50, 200}


def test_replay_halves_a_regressors_store_on_its_work_axis(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(store), "--strategy", "halving", "--repeats", "20", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert (document["rungs"], document["configurations"], document["repeats"]) == ([50, 200], 6, 20)
    assert main(["replay", str(store), "--strategy", "halving", "--repeats", "20"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "race(s), max_iter 50, 200" in said and "epochs" not in said
    assert document["full_grid_best"] == "spark 1 executor x 4 cores x 4 GiB"
    assert 0 < document["within_5pct"] <= 1


def test_the_report_heads_a_regressors_score_by_its_scorer(store: Path, tmp_path: Path) -> None:
    """R^2 is not an accuracy: the answer's and the configurations' tables say ``Score (r2)``."""
    assert main(["report", str(store), "--out", str(tmp_path / "report")]) == 0
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "| Score (r2) |" in markdown and "Spark score (r2)" in markdown and "Dask score (r2)" in markdown
    assert "accuracy |" not in markdown.lower()  # no column headed accuracy

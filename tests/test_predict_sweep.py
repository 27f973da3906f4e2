"""``sweeper predict`` on a real sweep of this machine: three Dask shapes, each predicted from the other two.

The machine has 2 cores and the grid asks for 3 per node (3 x 1, 1 x 2 and 1 x 3 cores), so one shape runs
oversubscribed: what the model does not know (it takes a slot for a core). The test prints the held-out error
and checks that it is measured, shown and honest about itself, not that it is small on this machine.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sweeper import load_results
from tests.conftest import REPO, minimal_grid

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def three_shapes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("whatif")
    grid = minimal_grid(
        name="whatif",
        store=str(tmp / "store"),
        cluster={"manager": "local", "nodes": 1, "cores_per_node": 3, "memory_per_node": "12GiB"},
        sizing={"cores_per_executor": [1, 2, 3], "reserve": {"cores": 0, "memory": "1GiB"}, "application_master": 0},
        engines=["dask"],
        baseline=False,
        workload={"dataset": "digits", "epochs": [5, 20], "trials": 2, "n_fits": 6},
    )
    path = tmp / "whatif.yaml"
    path.write_text(yaml.safe_dump(grid))
    done = subprocess.run(
        [sys.executable, "-m", "sweeper", "run", str(path)], capture_output=True, text=True, timeout=600, cwd=REPO
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return tmp / "store", path


def test_each_measured_shape_is_predicted_from_the_other_two(three_shapes: tuple[Path, Path]) -> None:
    store, grid = three_shapes
    shown = subprocess.run(
        [sys.executable, "-m", "sweeper", "predict", str(store), "--validate"], capture_output=True, text=True, cwd=REPO
    )
    assert shown.returncode == 0, shown.stderr
    print(shown.stdout)  # the held-out error on this machine (pytest -s)
    assert shown.stdout.startswith("dask: each configuration predicted from the others: median error ")
    document = json.loads(
        subprocess.run(
            [sys.executable, "-m", "sweeper", "predict", str(store), "--grid", str(grid), "--json"],
            capture_output=True, text=True, cwd=REPO, check=True,
        ).stdout
    )  # fmt: skip
    validation = document["validation"]
    assert validation["n_held_out"] == 3 * 2  # 3 shapes x 2 epochs, each from the other two shapes
    assert math.isfinite(validation["held_out_median_rel_error"])
    assert validation["held_out_max_rel_error"] >= validation["held_out_median_rel_error"]
    trusted = validation["held_out_median_rel_error"] <= 0.10
    verdict = "good enough to name shapes worth measuring" if trusted else "do not rely on its predictions"
    assert verdict in shown.stdout
    predictions = document["predictions"]
    assert len(predictions) == 3 * 2  # the grid it learned from: every launch and epochs, none beyond it
    assert not any(p["extrapolated"] for p in predictions)
    assert all(0 < p["predicted_median_s"] < 60 for p in predictions)


def test_a_sweep_run_with_predictions_keeps_them_and_its_report_compares(
    three_shapes: tuple[Path, Path], tmp_path: Path
) -> None:
    """sweeper run --predict-from: every row carries the batch time predicted before the run (predicted_s), and the
    report has a "Predicted vs measured" section and figure. One launch (1 x 2 cores), 1 trial at 20 epochs."""
    store, _ = three_shapes
    grid = minimal_grid(
        name="whatif-next",
        store=str(tmp_path / "next"),
        cluster={"manager": "local", "nodes": 1, "cores_per_node": 2, "memory_per_node": "12GiB"},
        sizing={"cores_per_executor": [2], "reserve": {"cores": 0, "memory": "1GiB"}, "application_master": 0},
        engines=["dask"],
        baseline=False,
        workload={"dataset": "digits", "epochs": [20], "trials": 1, "n_fits": 6},
    )
    path = tmp_path / "next.yaml"
    path.write_text(yaml.safe_dump(grid))
    sweeper = [sys.executable, "-m", "sweeper"]
    done = subprocess.run(
        [*sweeper, "run", str(path), "--predict-from", str(store)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    flat = " ".join(done.stdout.split())  # lines wrapped at 100 columns
    assert f"predicted from {store}: dask: each configuration predicted from the others" in flat
    rows = load_results(tmp_path / "next")
    assert len(rows) == 1 and rows["status"].tolist() == ["ok"]
    predicted = json.loads(
        subprocess.run(
            [*sweeper, "predict", str(store), "--grid", str(path), "--json"], capture_output=True, text=True, cwd=REPO
        ).stdout
    )["predictions"]
    assert rows["predicted_s"].tolist() == [pytest.approx(predicted[0]["predicted_median_s"])]
    out = tmp_path / "report"
    report = subprocess.run(
        [*sweeper, "report", str(tmp_path / "next"), "--out", str(out)], capture_output=True, text=True, cwd=REPO
    )
    assert report.returncode == 0, report.stderr
    markdown = (out / "report.md").read_text()
    assert "## Predicted vs measured" in markdown and "predicted_vs_measured.png" in markdown
    assert (out / "predicted_vs_measured.png").read_bytes().startswith(b"\x89PNG")

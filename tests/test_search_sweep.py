"""Real sweeps that spend less cluster time: adaptive trials and successive halving through the CLI, then replay."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from sweeper import load_results
from sweeper.results import statistics
from sweeper.search.accounting import cluster_seconds
from sweeper.search.adaptive import CI_REACHED, MAX_TRIALS
from tests.conftest import REPO, minimal_grid
from tests.support.leftovers import assert_no_launch_processes

pytestmark = pytest.mark.integration
EPOCHS = [5, 30]
CONFIGURATIONS = 4  # spark and dask x 1 and 2 cores per executor


def write(tmp: Path, name: str, trials: Any, search: dict[str, Any] | None, cores: tuple[int, ...] = (1, 2)) -> Path:
    spec = minimal_grid(name=name, store=str(tmp / "store"))
    spec["sizing"]["cores_per_executor"] = list(cores)
    spec["workload"] = {"dataset": "digits", "epochs": EPOCHS, "trials": trials, "model": {"hidden_layer_sizes": [32]}}
    if search is not None:
        spec["search"] = search
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def sweeper(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sweeper", *args], capture_output=True, text=True, timeout=900, cwd=REPO
    )


@pytest.fixture(scope="module")
def halved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str], Any]:
    """A halving sweep with adaptive trials, then the same command again (a resume: nothing left to take)."""
    tmp = tmp_path_factory.mktemp("halving")
    grid = write(tmp, "halved", {"min": 3, "max": 6, "target_rel_ci": 0.2}, {"strategy": "halving", "eta": 3})
    first, again = sweeper("run", str(grid)), sweeper("run", str(grid))
    assert_no_launch_processes()
    return tmp / "store", first, again


def test_halving_measures_every_configuration_first_then_prunes(halved: tuple[Path, Any, Any]) -> None:
    store, first, _ = halved
    assert first.returncode == 0, first.stdout + first.stderr
    frame = load_results(store)
    cluster = frame[frame["engine"] != "local"]
    config = ["engine", "cores_per_executor"]
    at = {rung: cluster[cluster["rung"] == rung] for rung in (0, 1)}
    assert at[0]["epochs"].eq(EPOCHS[0]).all() and at[1]["epochs"].eq(EPOCHS[1]).all()
    assert set(frame["rung_axis"]) == {"epochs"}  # every row of the halving run, the baseline's too
    assert len(at[0][at[0]["status"] == "ok"].drop_duplicates(config)) == CONFIGURATIONS
    measured = at[1][at[1]["status"] == "ok"].drop_duplicates(config)
    pruned = at[1][at[1]["status"] == "pruned"]
    assert len(measured) >= 2 and len(measured) + len(pruned) == CONFIGURATIONS
    assert pruned["fit_wall_s"].isna().all() and pruned["error"].str.contains("not among the fastest").all()
    # the baseline is a reference, measured at every rung; pruned rows are in no statistic and no failure count
    assert sorted(frame.loc[frame["engine"] == "local", "epochs"].unique()) == EPOCHS
    assert statistics.failures(frame).empty and len(statistics.pruned(frame)) == len(pruned)
    # the fastest third (at least 2), and the best of each engine
    assert re.search(r"Halving: epochs 5: 4 measured, [23] kept", first.stdout), first.stdout
    assert set(at[1].loc[at[1]["status"] == "ok", "engine"]) == {"spark", "dask"}


def test_adaptive_trials_stop_each_point_once_and_say_why(halved: tuple[Path, Any, Any]) -> None:
    store, _, _ = halved
    ok = load_results(store).query("status == 'ok'")
    for _, point in ok.groupby(["engine", "cores_per_executor", "epochs"]):
        reasons = [None if pd.isna(r) else r for r in point.sort_values("trial")["stop_reason"]]
        assert 3 <= len(point) <= 6 and reasons[:-1] == [None] * (len(point) - 1), reasons
        assert reasons[-1] in (CI_REACHED, MAX_TRIALS) and (reasons[-1] == CI_REACHED or len(point) == 6)


def test_the_run_accounts_its_cluster_time_and_a_resume_takes_nothing(halved: tuple[Path, Any, Any]) -> None:
    store, first, again = halved
    frame = load_results(store)
    spent = cluster_seconds(frame)
    assert spent.start_s > 0 and spent.measured_s > 0 and 0 < spent.measured_share < 1
    assert "Cluster time:" in first.stdout and "the full grid would have taken about" in first.stdout
    assert again.returncode == 0 and "0 rows written" in again.stdout, again.stdout + again.stderr
    assert len(load_results(store)) == len(frame)  # no measurement and no pruned row twice


def test_the_report_shows_the_rungs_the_pruned_and_the_cluster_time(
    halved: tuple[Path, Any, Any], tmp_path: Path
) -> None:
    store, _, _ = halved
    result = sweeper("report", str(store), "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "report.md").read_text()
    assert "## Successive halving" in text and "## Adaptive trials" in text
    assert "| 0 | 5 | 4 | 0 | - |" in text and "configurations) |" in text  # rung 1 has its rank agreement
    assert "the full grid would have taken about" in text
    if len(statistics.pruned(load_results(store))):
        assert "not among the fastest at epochs 5" in text
    else:  # the rung orders disagreed (a noisy machine): the rank check brought every pruned configuration back
        assert "| 1 | 30 | 4 | 0 |" in text
    assert text.count("## Results:") == 1  # pruned rows belong to the sweep's one workload


@pytest.fixture(scope="module")
def raced(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str], Any]:
    """A race sweep of Spark and Dask (2 to 4 trials a point) through ``search: {}`` (auto: a race, and its choice
    after the first round), then the same command again (a resume: nothing left to take)."""
    tmp = tmp_path_factory.mktemp("race")
    grid = write(tmp, "raced", 4, {}, cores=(2,))
    first, again = sweeper("run", str(grid)), sweeper("run", str(grid))
    assert_no_launch_processes()
    return tmp / "store", first, again


def test_a_race_measures_every_configuration_at_every_point_and_records_how_each_ended(
    raced: tuple[Path, Any, Any],
) -> None:
    store, first, again = raced
    assert first.returncode == 0, first.stdout + first.stderr
    frame = load_results(store)
    assert set(frame["search_strategy"]) == {"race"} and set(frame["race_delta"].dropna()) == {0.05}
    cluster = frame[frame["engine"] != "local"]
    assert cluster["race_round"].notna().all() and frame.loc[frame["engine"] == "local", "race_round"].isna().all()
    for (engine, cores, epochs), rows in cluster.groupby(["engine", "cores_per_executor", "epochs"]):
        ok, pruned = rows[rows["status"] == "ok"], rows[rows["status"] == "pruned"]
        assert 2 <= len(ok) <= 4 and len(pruned) <= 1, (engine, cores, epochs)
        if len(pruned):  # stopped by a decision: it says which, at the trial it would have taken next
            assert pruned["stop_reason"].iloc[0] in ("left the race", "race settled") and len(ok) < 4
            assert int(pruned["trial"].iloc[0]) == len(ok) and pruned["fit_wall_s"].isna().all()
        else:
            assert len(ok) == 4 and ok.sort_values("trial")["stop_reason"].iloc[-1] == "max trials"
    assert len(cluster.drop_duplicates(["engine", "cores_per_executor", "epochs"])) == 2 * len(EPOCHS)
    assert re.search(r"Race: \d round\(s\) of launches", first.stdout), first.stdout
    assert "the full grid would have taken about" in first.stdout
    ended = r"(settled after|not settled at its most trials|measured in full after auto's choice)"
    assert re.search(rf"Race: epochs 5: {ended}", first.stdout), first.stdout
    assert "search: auto chose race" in first.stdout and "Race: auto, after the first round: " in first.stdout
    assert again.returncode == 0 and "0 rows written" in again.stdout, again.stdout + again.stderr
    assert len(load_results(store)) == len(frame)


def test_the_report_explains_the_race(raced: tuple[Path, Any, Any], tmp_path: Path) -> None:
    store, _, _ = raced
    result = sweeper("report", str(store), "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "report.md").read_text()
    assert "## Racing" in text and "confidently more than 5% slower" in text and "## Adaptive trials" not in text
    table = text.split("Races (fastest first", 1)[1]
    assert table.count("| spark |") + table.count("| dask |") == 2 * len(EPOCHS)

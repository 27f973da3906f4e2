"""Local sweeps end to end: real Spark executor JVMs, a real Dask LocalCluster, the real store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from sweeper import load_results
from sweeper.config import load as grid_file
from sweeper.config.grid import Dataset
from sweeper.planning.dry_run import shrink_plan
from sweeper.planning.measurements import pending, split_reused
from sweeper.planning.plan import make_plan
from sweeper.results.report.content import Rows, build_report
from sweeper.results.statistics import config_label
from sweeper.run import launches as run_launches
from sweeper.run import measure, runner
from sweeper.run.signals import EXIT_MEASUREMENT_FAILED
from sweeper.store.lock import LOCK_NAME
from sweeper.store.parquet import sweeps
from sweeper.workload.data import load
from tests.conftest import REPO, minimal_grid
from tests.support import launches
from tests.support.batches import replicas
from tests.support.figures import assert_resource_figures
from tests.support.leftovers import assert_no_launch_processes

pytestmark = pytest.mark.integration


def small_grid(tmp: Path, name: str = "small", **workload: Any) -> Path:
    grid = minimal_grid(name=name, store=str(tmp / "store"))
    grid["workload"] = {"dataset": "digits", "epochs": [3, 8], "trials": 2, **workload}
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(grid))
    return path


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """One real sweep through the command line: baseline, Spark 2 x 1, Dask 2 x 1."""
    tmp = tmp_path_factory.mktemp("sweep")
    grid = small_grid(tmp)
    result = subprocess.run(
        [sys.executable, "-m", "sweeper", "run", str(grid)], capture_output=True, text=True, timeout=600, cwd=REPO
    )
    return tmp / "store", result


def test_sweep_writes_a_row_per_engine_epochs_and_trial(swept: tuple[Path, Any]) -> None:
    store, result = swept
    assert result.returncode == 0, result.stdout + result.stderr
    frame = load_results(store)
    assert len(frame) == 3 * 2 * 2
    assert set(frame["status"]) == {"ok"}, frame[["engine", "error"]]
    counts = frame.groupby(["engine", "epochs"]).size()
    assert counts.to_dict() == {(e, n): 2 for e in ("dask", "local", "spark") for n in (3, 8)}
    assert (frame["accuracy"] > 0.5).all()
    assert (frame["epochs_run"] <= frame["epochs"]).all()
    assert frame["teardown_s"].notna().all() and (frame["teardown_s"] >= 0).all()  # each launch's, on its rows
    assert_resource_figures(frame)
    assert "Summary" in result.stdout and "12 rows written" in result.stdout
    assert not [line for line in result.stdout.splitlines() if line.startswith("exit ")]  # 0 needs no reason


def test_every_launch_was_granted_its_plan_by_real_workers(swept: tuple[Path, Any]) -> None:
    frame = load_results(swept[0])
    clusters = frame[frame["engine"] != "local"]
    assert (clusters["granted_executors"] == clusters["executors"]).all()
    assert (clusters["granted_cores_per_executor"] == clusters["cores_per_executor"]).all()
    assert (clusters["granted_executor_memory_gib"] == clusters["executor_memory_gib"]).all()
    # the 2 fits of a batch ran in 2 different worker processes (executor JVMs' Python workers)
    assert (clusters["worker_pids"] == 2).all()
    assert frame.loc[frame["engine"] == "spark", "java_version"].str.startswith("17").all()


def test_fits_saw_the_same_controlled_environment_on_every_engine(swept: tuple[Path, Any]) -> None:
    frame = load_results(swept[0])
    environments = {engine: set(group["fit_environment"]) for engine, group in frame.groupby("engine")}
    assert len({frozenset(e) for e in environments.values()}) == 1, environments
    seen = json.loads(next(iter(environments["dask"])))
    assert seen["OMP_NUM_THREADS"] == "1" and seen["PYTHONHASHSEED"] == "6640"
    assert "MALLOC_TRIM_THRESHOLD_" not in seen  # Dask's nanny default is removed for fairness


def test_the_store_is_compacted_and_readable_by_spark(swept: tuple[Path, Any]) -> None:
    store = swept[0]
    files = sorted(p.name for p in (store / "small").iterdir() if p.name != LOCK_NAME)  # the sweep's lock stays
    assert len(files) == 3 and all(f.endswith(".parquet") and not f.startswith(".") for f in files)
    assert not (store / ".scratch").exists()
    from pyspark.sql import SparkSession

    from sweeper.launch.spark.session import stop_spark

    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    try:
        rows = spark.read.parquet(str(store / "small")).groupBy("engine").count().collect()
        assert {r["engine"]: r["count"] for r in rows} == {"local": 4, "spark": 4, "dask": 4}
    finally:
        stop_spark(exit_wait_s=10)


def test_no_process_of_the_sweep_is_left(swept: tuple[Path, Any]) -> None:
    assert_no_launch_processes()


def test_replay_of_the_real_sweep_simulates_halving_with_adaptive_trials(swept: tuple[Path, Any]) -> None:
    store, _ = swept
    result = subprocess.run(
        [sys.executable, "-m", "sweeper", "replay", str(store), "--repeats", "200", "--trials", "adaptive", "--json"],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    replay = json.loads(result.stdout)
    assert replay["repeats"] == 200 and replay["configurations"] == 2 and replay["rungs"] == [3, 8]  # spark, dask
    assert 0 <= replay["within_5pct"] <= replay["within_10pct"] <= 1, replay
    # adaptive trials may take more than the 2 recorded, and halving starts each launch once per rung:
    # on this small grid it can cost more than the full grid, which is what replay is there to tell
    assert replay["cluster_s_fraction"] > 0 and replay["full_grid_cluster_s"] > 0
    assert replay["wrong_engine"] is None or 0 <= replay["wrong_engine"] <= 1
    assert pd.notna(replay["regret_median"])


def test_running_again_resumes_only_what_is_missing(swept: tuple[Path, Any], tmp_path: Path) -> None:
    store = swept[0]
    grid = grid_file.load(small_grid(store.parent))
    plan = make_plan(grid)
    again = runner.run(plan, store=store)
    assert (again.skipped, len(again.rows)) == (12, 0)
    dask_file = next(p for p in (store / "small").iterdir() if "-002" in p.name)
    dask_file.rename(tmp_path / dask_file.name)  # lose the Dask launch's rows
    resumed = runner.run(plan, store=store)
    assert resumed.skipped == 8
    assert {row["engine"] for row in resumed.rows} == {"dask"} and len(resumed.rows) == 4
    assert len(load_results(store)) == 12
    assert_no_launch_processes()


def test_a_failing_fit_is_a_failed_row_with_its_original_error_on_every_engine(tmp_path: Path) -> None:
    grid = grid_file.load(small_grid(tmp_path, name="failing", epochs=[3], trials=1))
    # Stand-in for a fit that raises: a solver the grid validator would refuse, set behind its back,
    # so that MLPClassifier raises its own InvalidParameterError inside the worker.
    broken = replace(grid, workload=replace(grid.workload, model_axes=(("solver", ("no-such-solver",)),)))
    result = runner.run(make_plan(broken), store=tmp_path / "store")
    assert {row["engine"] for row in result.rows} == {"local", "spark", "dask"}
    for row in result.rows:
        assert row["status"] == "failed"
        assert row["error_type"] == "InvalidParameterError", (row["engine"], row["error"])
        assert "The 'solver' parameter of MLPClassifier must be a str among" in str(row["error"])
    assert_no_launch_processes()


def test_a_batch_past_its_time_limit_is_a_timeout_row_and_the_launch_restarts(tmp_path: Path) -> None:
    grid = grid_file.load(small_grid(tmp_path, name="slow", epochs=[2000], trials=2, timeout_s=1.5, exact_epochs=True))
    only_dask = replace(grid, engines=("dask",), baseline=False)
    started = time.monotonic()
    result = runner.run(make_plan(only_dask), store=tmp_path / "store")
    assert [row["status"] for row in result.rows] == ["timeout", "timeout"], [row["error"] for row in result.rows]
    assert time.monotonic() - started < 60
    assert_no_launch_processes()


def test_a_dask_launch_measures_again_after_a_batch_aborted_at_its_time_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The abort path, made deterministic: a time limit of 0 s aborts the batch wherever it is.

    Before, the next batch met a cluster with its workers restarting and the shipped data lost: with
    one core registered, joblib ran it here, in the driver, on the data's handle (``'Future' object
    has no attribute 'resolve'``); a second abort during the restart hung the nanny's close().
    """
    from sweeper.launch.dask.session import DaskSession
    from sweeper.launch.registry import starter

    data = load(Dataset("digits"))
    tasks = replicas(data)
    launch = launches.launch("dask", memory_overhead_mib=0)
    context = launches.context(tmp_path / "run")
    with starter("dask", "local")(launch, context) as session:
        assert isinstance(session, DaskSession)
        first = {r.pid for r in measure.with_timeout(session, tasks, data, 600)}
        for _ in range(2):  # twice: the second abort finds the workers the first one's restart started
            with pytest.raises(measure.MeasurementTimeout):
                measure.with_timeout(session, tasks, data, 0.0)
        again = measure.with_timeout(session, tasks, data, 600)
        assert len({r.pid for r in again}) == 2 and not first & {r.pid for r in again}
        # A worker that leaves while the data is broadcast fails Dask's replicate with a KeyError naming it (met once,
        # on a busy machine, after the aborts above): the data is shipped again. A stand-in for that race, which
        # cannot be timed here: the client's next scatter raises Dask's KeyError.
        scatters = []
        real_scatter = session.client.scatter

        def losing_a_worker_once(*args: Any, **kwargs: Any) -> Any:
            scatters.append(args)
            if len(scatters) == 1:
                raise KeyError("tcp://127.0.0.1:1")
            return real_scatter(*args, **kwargs)

        with monkeypatch.context() as patched:
            patched.setattr(session.client, "scatter", losing_a_worker_once)
            session.forget_shipped()  # the next batch ships the data again
            assert len(measure.with_timeout(session, tasks, data, 600)) == len(tasks) and len(scatters) == 2
        # one core left (a worker retired): the batch still runs on the cluster, not in this process
        session.client.retire_workers([sorted(session.worker_addresses())[0]])
        assert sum(session.client.ncores().values()) == 1
        alone = session.run_batch(tasks, data)
        assert os.getpid() not in {r.pid for r in alone} and all(0 < r.accuracy <= 1 for r in alone)
    assert_no_launch_processes()


def test_the_baseline_measures_again_after_a_batch_aborted_at_its_time_limit(tmp_path: Path) -> None:
    from sweeper.launch.registry import starter

    data = load(Dataset("digits"))
    launch = launches.launch("local", executors=1, executor_memory_mib=0, memory_overhead_mib=0)
    context = launches.context(tmp_path / "run")
    with starter("local")(launch, context) as session:
        with pytest.raises(measure.MeasurementTimeout):
            measure.with_timeout(session, replicas(data), data, 0.0)
        again = measure.with_timeout(session, replicas(data), data, 600)
        assert len(again) == 2 and all(0 < r.accuracy <= 1 for r in again)
    assert_no_launch_processes()


def test_a_warm_up_past_the_time_limit_restarts_the_launch_before_measuring(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The aborted warm-up left the launch restarting its workers: the measurement gets a fresh launch."""
    starts: list[str] = []
    real_starter = run_launches.starter

    def counting_starter(engine: str, manager: str = "local") -> Any:
        starts.append(engine)
        return real_starter(engine, manager)

    monkeypatch.setattr(run_launches, "starter", counting_starter)
    grid = small_grid(tmp_path, name="cold", epochs=[200], trials=1, timeout_s=0.001, exact_epochs=True)
    spec = yaml.safe_load(grid.read_text())
    spec["exclude"] = [{"engine": "spark"}, {"engine": "dask"}]  # the baseline alone: one cheap local worker
    grid.write_text(yaml.safe_dump(spec))
    result = runner.run(make_plan(grid_file.load(grid)), store=tmp_path / "store")
    assert starts == ["local", "local"]
    assert [(row["status"], row["warmup_s"]) for row in result.rows] == [("timeout", None)]
    assert_no_launch_processes()


@pytest.mark.parametrize("dry_run", [False, True], ids=["sweep", "dry-run"])
def test_a_measurement_that_did_not_end_ok_exits_4_after_writing_its_row_and_the_summary(
    tmp_path: Path, dry_run: bool
) -> None:
    """The baseline alone, past a time limit of 1 ms: a ``timeout`` row, the summary and answer, then the reason."""
    grid = small_grid(tmp_path, name="late", epochs=[200], trials=1, timeout_s=0.001, exact_epochs=True)
    spec = yaml.safe_load(grid.read_text())
    spec["exclude"] = [{"engine": "spark"}, {"engine": "dask"}]  # one cheap local worker
    grid.write_text(yaml.safe_dump(spec))
    result = subprocess.run(
        [sys.executable, "-m", "sweeper", "run", str(grid), *(["--dry-run"] if dry_run else [])],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )  # fmt: skip
    assert result.returncode == EXIT_MEASUREMENT_FAILED, result.stdout + result.stderr
    rows = load_results(tmp_path / "store", "late-dry-run" if dry_run else "late", dry_runs=True)
    assert rows["status"].tolist() == ["timeout"], rows[["status", "error"]]
    assert "Summary" in result.stdout and "1 row written" in result.stdout and "Cluster time:" in result.stdout
    last = result.stdout.strip().splitlines()[-1]
    assert last == "exit 4: 1 measurement timed out; see the rows' error column", result.stdout
    assert_no_launch_processes()


@pytest.fixture(scope="module")
def report_grid_dry_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """``sweeper run grids/2node.yaml --dry-run``: three configurations, four epoch values, shrunk to here."""
    store = tmp_path_factory.mktemp("dry") / "store"
    result = subprocess.run(
        [sys.executable, "-m", "sweeper", "run", "grids/2node.yaml", "--dry-run", "--store", str(store)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert_no_launch_processes()
    return store, result


def table_structure(frame: pd.DataFrame) -> dict[tuple[str, str], list[str]]:
    """The report's per-configuration tables: {(caption, header): epochs of its lines}."""
    return {
        (block.caption, " | ".join(block.header)): [line[0] for line in block.rows]
        for block in build_report(frame)
        if isinstance(block, Rows) and block.caption.startswith(("Config:", "Single-thread"))
    }


def test_dry_run_rows_carry_the_planned_configurations_and_epochs(report_grid_dry_run: tuple[Path, Any]) -> None:
    store, _ = report_grid_dry_run
    assert sweeps(store) == ["2node-dry-run"]  # never into the real sweep, 2node
    frame = load_results(store)
    assert len(frame) == 84 and frame["dry_run"].all() and set(frame["status"]) == {"ok"}
    cluster = frame[frame["engine"] != "local"]
    shapes = {tuple(s) for s in cluster[["cores_per_executor", "executors", "executor_memory_gib"]].values.tolist()}
    assert shapes == {(4, 9, 11.0), (5, 7, 13.0), (6, 5, 19.0)}  # seed 001's Tables 1-2, as planned
    assert sorted(frame["epochs"].unique()) == [10, 100, 1000, 10000]
    assert set(frame["dry_run_epochs"]) == {10, 20} and (frame["dry_run_epochs"] <= frame["epochs"]).all()
    granted_cores = cluster["granted_executors"] * cluster["granted_cores_per_executor"]
    assert (granted_cores <= (os.cpu_count() or 1)).all() and (granted_cores < cluster["total_cores"]).all()
    assert (frame["dry_run_train_rows"] <= 2000).all()
    engines = frame.groupby("launch_index")["engine"].agg(set).tolist()  # the plan's interleaved launches
    assert engines == [{e} for e in ("local", "spark", "dask", "dask", "spark", "spark", "dask")]


def test_dry_run_measures_each_shrunk_measurement_once(report_grid_dry_run: tuple[Path, Any]) -> None:
    store, _ = report_grid_dry_run
    frame = load_results(store)
    measured = frame[frame["reused_from"].isna()]
    # on 2 cores and 24 GiB: per engine, epochs 10 and the three capped at 20 on one shrunk launch, x 3 trials
    dry = shrink_plan(make_plan(grid_file.load(REPO / "grids" / "2node.yaml")))
    expected = len(split_reused(dry, pending(dry, set())[0])[0])
    assert len(measured) == expected < len(frame) and frame["measurement_key"].is_unique
    reused = frame[frame["reused_from"].notna()]
    source = measured.set_index("measurement_key")
    assert set(reused["reused_from"]) <= set(source.index)
    pairs = source.loc[reused["reused_from"]]
    assert (pairs["fit_wall_s"].to_numpy() == reused["fit_wall_s"].to_numpy()).all()
    assert (pairs["dry_run_epochs"].to_numpy() == reused["dry_run_epochs"].to_numpy()).all()
    assert (pairs["engine"].to_numpy() == reused["engine"].to_numpy()).all()


def test_dry_run_report_has_the_real_sweeps_tables(report_grid_dry_run: tuple[Path, Any]) -> None:
    """Configurations x epochs x engines as the real sweep of the grid will have them (from its plan)."""
    store, _ = report_grid_dry_run
    plan = make_plan(grid_file.load(REPO / "grids" / "2node.yaml"))
    structure = table_structure(load_results(store))
    epochs = [str(e) for e in plan.grid.workload.epochs]
    header = "# Epochs | Spark time (s) | Spark accuracy | Dask time (s) | Dask accuracy"
    planned = {
        config_label(launch.cores_per_executor, launch.executors, launch.executor_memory_gib)
        for launch in plan.launches
        if launch.engine != "local"
    }
    configs = {caption for caption, _ in structure if caption.startswith("Config:")}
    assert len(configs) == len(planned) == 3 and all(any(p in c for c in configs) for p in planned)
    assert all(lines == epochs for lines in structure.values())
    assert all(head == header for (caption, head) in structure if caption.startswith("Config:"))


def test_dry_run_keeps_launch_logs_out_of_the_terminal(report_grid_dry_run: tuple[Path, Any]) -> None:
    store, result = report_grid_dry_run
    for banner in ("Using incubator modules", "Setting default log level"):
        assert banner not in result.stdout + result.stderr
    logs = list((store / ".runs").glob("*/logs/launch-*-spark.log"))
    assert logs and any("Setting default log level" in log.read_text() for log in logs)
    assert not list((store / ".runs").glob("*/scratch"))


def test_dry_run_and_real_sweep_of_one_grid_have_the_same_tables(swept: tuple[Path, Any], tmp_path: Path) -> None:
    real_store, result = swept
    assert result.returncode == 0, result.stdout + result.stderr
    grid = tmp_path / "small.yaml"
    grid.write_text((real_store.parent / "small.yaml").read_text())
    dry = subprocess.run(
        [sys.executable, "-m", "sweeper", "run", str(grid), "--dry-run", "--store", str(tmp_path / "dry")],
        capture_output=True, text=True, timeout=600, cwd=REPO,
    )  # fmt: skip
    assert dry.returncode == 0, dry.stdout + dry.stderr
    real, preview = load_results(real_store), load_results(tmp_path / "dry")
    assert table_structure(preview) == table_structure(real) != {}
    assert_no_launch_processes()

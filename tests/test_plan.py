"""Planning: matched launches, their order, the workload axes and ``sweeper plan``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from sweeper import grid as grid_file
from sweeper.plan import dask_commands, make_plan, spark_command
from tests.conftest import REPO, minimal_grid, run_cli

REPORT_TABLES = {4: (9, 11), 5: (7, 13), 6: (5, 19)}  # cores -> (executors, memory GiB), Tables 1 and 2


def test_plan_json_reproduces_the_report_tables_1_and_2() -> None:
    result = run_cli("plan", "grids/2node.yaml", "--json")
    assert result.returncode == 0, result.stderr
    launches = json.loads(result.stdout)
    spark = {o["cores_per_executor"]: o for o in launches if o["engine"] == "spark"}
    dask = {o["cores_per_executor"]: o for o in launches if o["engine"] == "dask"}
    for cores, (executors, memory_gib) in REPORT_TABLES.items():
        assert (spark[cores]["executors"], spark[cores]["executor_memory_gib"]) == (executors, memory_gib)
        assert (dask[cores]["workers"], dask[cores]["threads_per_worker"], dask[cores]["memory_limit_gib"]) == (
            executors,
            cores,
            memory_gib,
        )
        assert (dask[cores]["executors"], dask[cores]["executor_memory_gib"]) == (executors, memory_gib)
    assert {o["memory_overhead_gib"] for o in spark.values()} == {1, 2}
    assert all("memory_overhead_gib" not in o for o in dask.values())


def test_plan_table_and_hand_commands() -> None:
    result = run_cli("plan", "grids/2node.yaml")
    assert result.returncode == 0, result.stderr
    flat = " ".join(result.stdout.split())
    assert (
        "spark-submit --master yarn --deploy-mode client --num-executors 7 --executor-cores 5 "
        "--executor-memory 13g --conf spark.executor.memoryOverhead=2g" in flat
    )
    assert "dask worker tcp://SCHEDULER_HOST:8786 --nworkers 4 --nthreads 5 --memory-limit 13GiB" in flat
    assert "84 measurements in 7 launches" in flat
    assert "warning:" in flat and "sizing.cores_per_executor[2]" in flat


def test_engines_alternate_per_configuration_after_the_baseline() -> None:
    plan = make_plan(grid_file.load(REPO / "grids/2node.yaml"))
    order = [(launch.engine, launch.cores_per_executor) for launch in plan.launches]
    assert order == [
        ("local", 1),
        ("spark", 4),
        ("dask", 4),
        ("dask", 5),
        ("spark", 5),
        ("spark", 6),
        ("dask", 6),
    ]
    assert [launch.index for launch in plan.launches] == list(range(7))


def test_batch_fills_the_largest_launch_and_is_the_same_for_all() -> None:
    plan = make_plan(grid_file.load(REPO / "grids/2node.yaml"))
    assert plan.n_fits == 36  # 9 executors x 4 cores, 1 thread per fit


@pytest.mark.parametrize(
    ("workload", "n_fits"),
    [
        pytest.param({"mode": "cv", "folds": 4}, 4, id="cv-folds"),
        pytest.param({"mode": "search", "folds": 3, "param_grid": {"alpha": [0.1, 0.01]}}, 6, id="search"),
        pytest.param({"mode": "replicas", "n_fits": 5}, 5, id="replicas-set"),
        pytest.param({"mode": "replicas", "threads_per_fit": 2}, 1, id="replicas-two-threads"),
        pytest.param({"mode": "data-parallel"}, 1, id="data-parallel-one-model"),
    ],
)
def test_batch_size_per_mode(workload: dict[str, object], n_fits: int, write_grid: Callable[..., Path]) -> None:
    grid = minimal_grid()
    grid["workload"] = {**grid["workload"], **workload}
    plan = make_plan(grid_file.load(write_grid(grid)))
    assert plan.fits(grid["workload"].get("mode", "replicas")) == n_fits


def test_axes_are_a_cross_product_with_exclude_and_only(write_grid: Callable[..., Path]) -> None:
    grid = minimal_grid()
    grid["workload"] = {**grid["workload"], "epochs": [5, 50], "fraction": [0.5, 1.0], "trials": 2}
    plan = make_plan(grid_file.load(write_grid(grid, "all.yaml")))
    assert [len(points) for points in plan.points.values()] == [4, 4, 4]
    assert plan.n_measurements == 3 * 4 * 2

    grid["exclude"] = [{"engine": "spark", "epochs": 50}]
    plan = make_plan(grid_file.load(write_grid(grid, "exclude.yaml")))
    spark = next(launch for launch in plan.launches if launch.engine == "spark")
    assert {p.epochs for p in plan.points[spark.index]} == {5}
    assert plan.n_measurements == (4 + 2 + 4) * 2

    grid["exclude"] = []
    grid["only"] = [{"fraction": 0.5}]
    plan = make_plan(grid_file.load(write_grid(grid, "only.yaml")))
    assert all(p.fraction == 0.5 for points in plan.points.values() for p in points)


def test_a_launch_with_nothing_left_to_measure_is_dropped(write_grid: Callable[..., Path]) -> None:
    grid = {**minimal_grid(), "exclude": [{"engine": "dask"}], "baseline": False}
    plan = make_plan(grid_file.load(write_grid(grid)))
    assert [launch.engine for launch in plan.launches] == ["spark"]


def test_local_spark_command_uses_real_executor_jvms() -> None:
    plan = make_plan(grid_file.load(REPO / "grids/local.yaml"))
    spark = next(launch for launch in plan.launches if launch.engine == "spark")
    assert "local-cluster[2,1,3072]" in spark_command(spark)
    dask = next(launch for launch in plan.launches if launch.engine == "dask")
    assert dask_commands(dask)[1].startswith("dask worker tcp://SCHEDULER_HOST:8786 --nworkers 2 --nthreads 1")


def test_version_flag_prints_the_package_version() -> None:
    from sweeper import __version__

    result = run_cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"sweeper {__version__}"

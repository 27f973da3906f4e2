"""Planning: matched launches, their order, the workload axes and ``sweeper plan``."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweeper.cli import main
from sweeper.config import load as grid_file
from sweeper.errors import UserError
from sweeper.planning.dry_run import shrink_plan
from sweeper.planning.hand_commands import dask_commands, spark_command
from sweeper.planning.plan import (
    MAX_MEASUREMENTS,
    MAX_RULES,
    Launch,
    Plan,
    Point,
    make_plan,
)
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
    hand = result.stdout.partition("by hand")[2].splitlines()[1:]
    assert hand and all(len(line) <= 100 for line in hand), "a hand command's line runs past 100 columns (#35)"
    assert any(line.endswith(" \\") for line in hand)  # a long command goes on, as a shell reads it
    flat = " ".join(result.stdout.replace(" \\\n", " ").split())
    assert (
        "pyspark --master yarn --deploy-mode client --num-executors 7 --executor-cores 5 "
        "--executor-memory 13g --conf spark.executor.memoryOverhead=2g" in flat
    )
    assert "sweep.py" not in flat and "1 nodes" not in flat and "2 nodes x 24 cores x 64GiB" in flat
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


def test_mllib_solver_is_an_axis_of_spark_mllib_only(write_grid: Callable[..., Path]) -> None:
    """scikit-learn's engines ignore mllib_solver: they measure each point once, without it."""
    grid = minimal_grid(engines=["spark", "dask", "spark-mllib"])
    grid["workload"] = {
        **grid["workload"],
        "mode": ["replicas", "data-parallel"],
        "model": {"mllib_solver": ["l-bfgs", "gd"]},
    }
    plan = make_plan(grid_file.load(write_grid(grid)))
    for launch in plan.launches:
        points = plan.points[launch.index]
        solvers = [p.model_params.get("mllib_solver") for p in points]
        if launch.engine == "spark-mllib":
            assert [(p.mode, s) for p, s in zip(points, solvers, strict=True)] == [
                ("data-parallel", "l-bfgs"),
                ("data-parallel", "gd"),
            ]
        else:
            assert solvers == [None, None] and [p.mode for p in points] == ["replicas", "data-parallel"]


def test_local_hand_commands_run_here_on_real_executor_jvms() -> None:
    plan = make_plan(grid_file.load(REPO / "grids/local.yaml"))
    spark = next(launch for launch in plan.launches if launch.engine == "spark")
    local_cluster = "SPARK_LOCAL_IP=127.0.0.1 pyspark --master 'local-cluster[2,1,3072]'"
    assert spark_command(spark, plan.grid).startswith(local_cluster)
    dask = next(launch for launch in plan.launches if launch.engine == "dask")
    assert dask_commands(dask, plan.grid) == [
        "dask scheduler --host 127.0.0.1  # on this machine",
        "dask worker tcp://127.0.0.1:8786 --nworkers 2 --nthreads 1 --memory-limit 2GiB  # on this machine",
    ]
    shown = " ".join(run_cli("plan", "grids/local.yaml").stdout.split())
    assert "(grids/local.yaml): manager local, 1 node x 2 cores x 8GiB" in shown


def test_ssh_hand_commands_name_the_grid_s_hosts() -> None:
    plan = make_plan(grid_file.load(REPO / "grids/2node-ssh.yaml"))
    spark = next(launch for launch in plan.launches if launch.engine == "spark")
    assert spark_command(spark, plan.grid).startswith("pyspark --master spark://node1.example.org:7077 ")
    dask = next(launch for launch in plan.launches if launch.engine == "dask")
    lines = dask_commands(dask, plan.grid)
    assert lines[0] == "dask scheduler --host node1.example.org  # on node1.example.org"
    assert lines[-1].startswith("dask worker tcp://node1.example.org:8786 ")
    assert lines[-1].endswith("# on node2.example.org")


def test_version_flag_prints_the_package_version() -> None:
    from sweeper import __version__

    result = run_cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"sweeper {__version__}"


AXES_GRID: dict[str, Any] = {
    "name": "t",
    "cluster": {"manager": "local", "nodes": 2, "cores_per_node": 4, "memory_per_node": "32GiB"},
    "sizing": {"cores_per_executor": [1, 2], "reserve": {"cores": 0, "memory": "1GiB"}, "application_master": 0},
    "engines": ["spark", "dask", "spark-mllib"],
    "workload": {
        "dataset": "digits",
        "epochs": [5, 10],
        "fraction": [0.5, 1.0],
        "trials": 2,
        "mode": ["replicas", "data-parallel"],
        "model": {"alpha": [0.1, 0.01], "hidden_layer_sizes": [[8], [4, 4]]},
    },
}
BASE = grid_file.parse(AXES_GRID, Path("axes.yaml"))


def big_grid(epochs: int, fractions: int, alphas: int) -> dict[str, Any]:
    """A grid whose axes multiply to epochs x fractions x alphas points (x 3 launches, 1 trial)."""
    grid = minimal_grid()
    grid["workload"] = {
        "dataset": "digits",
        "epochs": list(range(1, epochs + 1)),
        "fraction": [round((i + 1) / fractions, 6) for i in range(fractions)],
        "model": {"alpha": [round(0.0001 * (i + 1), 6) for i in range(alphas)]},
        "trials": 1,
    }
    return grid


def peak_bytes(call: Callable[[], object]) -> tuple[object, int]:
    """``call()``'s result (or the exception it raised) and the peak memory it allocated."""
    tracemalloc.start()
    try:
        try:
            result: object = call()
        except UserError as error:
            result = error
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_ten_million_measurements_are_refused_before_any_is_built(
    write_grid: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_grid(big_grid(epochs=1000, fractions=100, alphas=100))
    grid = grid_file.load(path)
    refused, peak = peak_bytes(lambda: make_plan(grid))
    assert isinstance(refused, UserError)
    assert peak < 2 * 1024 * 1024, f"planning allocated {peak} bytes before refusing"
    assert main(["plan", str(path)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert (
        f"error: {path}: the grid asks for 30,000,000 measurements (axes: 3 launch(es) x 100 model.alpha x "
        f"100 fraction x 1,000 epochs x 1 trial(s), before exclude/only); at most {MAX_MEASUREMENTS:,}"
    ) in err, err


@pytest.mark.slow  # ~8 s
def test_a_million_measurements_are_planned(write_grid: Callable[..., Path]) -> None:
    grid = grid_file.load(write_grid({**big_grid(epochs=1000, fractions=1000, alphas=1), "baseline": False}))
    grid = replace(grid, engines=("dask",))
    plan, peak = peak_bytes(lambda: make_plan(grid))
    assert isinstance(plan, Plan) and plan.n_measurements == MAX_MEASUREMENTS
    assert peak < 250 * 1024 * 1024, f"a plan of a million measurements took {peak} bytes"


def test_a_billion_nodes_are_refused_before_they_are_laid_out() -> None:
    grid = replace(BASE, cluster=replace(BASE.cluster, nodes=10**9))
    refused, peak = peak_bytes(lambda: make_plan(grid))
    assert isinstance(refused, UserError)
    assert "the plan would lay out 6,000,000,000 launch nodes (6 launches x 1,000,000,000 cluster.nodes)" in str(
        refused
    )
    assert peak < 1024 * 1024


def test_more_rules_than_the_limit_are_refused() -> None:
    rules = tuple({"epochs": 5, "fraction": index} for index in range(MAX_RULES + 1))
    with pytest.raises(UserError, match=f"exclude/only: {MAX_RULES + 1:,} rules; at most {MAX_RULES:,} together"):
        make_plan(replace(BASE, exclude=rules))


@pytest.mark.parametrize(
    "rules",
    [
        pytest.param({"exclude": [{"epochs": 5}]}, id="exclude-all"),
        pytest.param({"only": [{"engine": "spark"}], "exclude": [{"engine": "spark"}]}, id="only-then-exclude"),
    ],
)
def test_exclude_and_only_that_leave_no_measurement_exit_2(
    rules: dict[str, Any], write_grid: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_grid({**minimal_grid(), **rules})
    assert main(["plan", str(path)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"error: {path}: exclude/only leave no measurement of the 3 the axes ask for" in err, err


def test_a_rule_that_matches_nothing_is_a_warning_of_sweeper_plan(
    write_grid: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    rules = {
        "exclude": [{"engine": "dask"}, {"engine": "spark", "epochs": 10000}],
        "only": [{"mode": "cv"}, {"epochs": 5}],
    }
    path = write_grid({**minimal_grid(), **rules})
    assert main(["plan", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"warning: {path}: exclude[1]: matches no measurement of the grid" in out, out
    assert f"warning: {path}: only[0]: matches no measurement of the grid" in out, out
    assert "exclude[0]" not in out and "only[1]" not in out


def test_points_run_in_axis_order_mode_first_epochs_last() -> None:
    plan = make_plan(replace(BASE, baseline=False, engines=("dask",), cores_per_executor=(1,)))
    expected = [
        (mode, layers, alpha, fraction, epochs)
        for mode in ("replicas", "data-parallel")
        for layers in ((8,), (4, 4))
        for alpha in (0.1, 0.01)
        for fraction in (0.5, 1.0)
        for epochs in (5, 10)
    ]
    got = [
        (p.mode, p.model_params["hidden_layer_sizes"], p.model_params["alpha"], p.fraction, p.epochs)
        for p in plan.points[0]
    ]
    assert got == expected


RULE_VALUES = {
    "engine": st.sampled_from(["spark", "dask", "spark-mllib", "local", ["spark", "dask"]]),
    "cores_per_executor": st.sampled_from([1, 2, 3, [1, 2]]),
    "mode": st.sampled_from(["replicas", "data-parallel", "cv", ["cv", "replicas"]]),
    "epochs": st.sampled_from([5, 10, 7, [5, 7]]),
    "fraction": st.sampled_from([0.5, 1.0, 0.25]),
    "model.alpha": st.sampled_from([0.1, 0.01, 0.5, [0.1, 0.5]]),
    "model.hidden_layer_sizes": st.sampled_from([[8], [4, 4], [3]]),
    "model.activation": st.sampled_from(["relu", "tanh"]),
    "model.beta_1": st.sampled_from([0.9, None]),
}
RULES = st.dictionaries(st.sampled_from(sorted(RULE_VALUES)), st.just(0), min_size=1, max_size=3).flatmap(
    lambda keys: st.fixed_dictionaries({key: RULE_VALUES[key] for key in keys})
)


def rule_matches(rule: dict[str, Any], launch: Launch, point: Point) -> bool:
    """The definition: every key of the rule holds the measurement's value (a list: one of them)."""
    axes = {
        "engine": launch.engine,
        "cores_per_executor": launch.cores_per_executor,
        "mode": point.mode,
        "epochs": point.epochs,
        "fraction": point.fraction,
        **{f"model.{name}": value for name, value in point.params},
    }
    for key, wanted in rule.items():
        if key == "engine" and launch.engine == "local":
            return False
        if key == "model.hidden_layer_sizes":
            wanted = [tuple(wanted)]
        if axes.get(key) not in (wanted if isinstance(wanted, list) else [wanted]):
            return False
    return True


@settings(max_examples=150, deadline=None)
@given(exclude=st.lists(RULES, max_size=3), only=st.lists(RULES, max_size=2))
def test_exclude_and_only_select_what_their_definition_says(
    exclude: list[dict[str, Any]], only: list[dict[str, Any]]
) -> None:
    everything = make_plan(BASE)
    candidates = [(launch, point) for launch in everything.launches for point in everything.points[launch.index]]
    expected: dict[tuple[str, int], list[Point]] = {}
    for launch, point in candidates:
        if any(rule_matches(rule, launch, point) for rule in exclude):
            continue
        if only and not any(rule_matches(rule, launch, point) for rule in only):
            continue
        expected.setdefault((launch.engine, launch.cores_per_executor), []).append(point)
    unmatched = [
        f"{kind}[{index}]"
        for kind, rules in (("exclude", exclude), ("only", only))
        for index, rule in enumerate(rules)
        if not any(rule_matches(rule, launch, point) for launch, point in candidates)
    ]
    grid = replace(BASE, exclude=tuple(exclude), only=tuple(only))
    if not expected:
        with pytest.raises(UserError, match="exclude/only leave no measurement"):
            make_plan(grid)
        return
    plan = make_plan(grid)
    got = {(launch.engine, launch.cores_per_executor): list(plan.points[launch.index]) for launch in plan.launches}
    assert got == expected
    assert [launch.index for launch in plan.launches] == list(range(len(plan.launches)))
    assert [warning.split(": ")[1] for warning in plan.grid.warnings] == unmatched


def test_a_local_grid_bigger_than_this_machine_is_warned_about(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import psutil

    from sweeper.planning.view import beyond_this_machine

    monkeypatch.setattr("os.cpu_count", lambda: 2)
    monkeypatch.setattr(psutil, "virtual_memory", lambda: type("Memory", (), {"total": 8 * 2**30})())
    spec = minimal_grid(cluster={"manager": "local", "nodes": 1, "cores_per_node": 8, "memory_per_node": "64GiB"})
    plan = make_plan(grid_file.parse(spec, tmp_path / "g.yaml"))
    warnings = beyond_this_machine(plan)
    assert len(warnings) == 2
    assert warnings[0].startswith("cluster.cores_per_node: 8 is more than this machine's 2 cores")
    assert warnings[1].startswith("cluster.memory_per_node: 64GiB is more than this machine's 8GiB")
    assert beyond_this_machine(shrink_plan(plan)) == []  # a dry run fits the launches to the machine
    assert beyond_this_machine(make_plan(grid_file.parse(minimal_grid(), tmp_path / "g.yaml"))) == []

"""Grid validation: every malformed grid is rejected with exit code 2 and a message naming the key."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sweeper import grid as grid_file
from sweeper.cli import main
from sweeper.errors import UserError
from tests.conftest import minimal_grid, run_cli


def _with(section: str, **values: Any) -> dict[str, Any]:
    grid = minimal_grid()
    grid[section] = {**grid[section], **values}
    return grid


def _without(section: str, key: str) -> dict[str, Any]:
    grid = minimal_grid()
    grid[section] = {k: v for k, v in grid[section].items() if k != key}
    return grid


MALFORMED = [
    pytest.param(["not", "a", "mapping"], "must be a YAML mapping", id="top-level-list"),
    pytest.param(
        {**minimal_grid(), "engine": ["spark"]},
        r"engine: unknown key 'engine'; did you mean 'engines'",
        id="unknown-top-key",
    ),
    pytest.param(
        {k: v for k, v in minimal_grid().items() if k != "name"}, "name: must be a non-empty name", id="missing-name"
    ),
    pytest.param(
        {k: v for k, v in minimal_grid().items() if k != "cluster"}, "cluster: is required", id="missing-cluster"
    ),
    pytest.param(
        _with("cluster", node=2), r"cluster.node: unknown key 'node'; did you mean 'nodes'", id="unknown-cluster-key"
    ),
    pytest.param(
        _with("cluster", manager="yarm"),
        r"cluster.manager: must be one of .*got 'yarm'; did you mean 'yarn'",
        id="unknown-manager",
    ),
    pytest.param(_with("cluster", nodes=0), r"cluster.nodes: must be an integer >= 1, got 0", id="zero-nodes"),
    pytest.param(_with("cluster", nodes=-2), r"cluster.nodes: must be an integer >= 1, got -2", id="negative-nodes"),
    pytest.param(
        _with("cluster", nodes="two"), r"cluster.nodes: must be an integer >= 1, got 'two'", id="nodes-not-a-number"
    ),
    pytest.param(_with("cluster", nodes=True), r"cluster.nodes: must be an integer >= 1, got True", id="nodes-boolean"),
    pytest.param(
        _without("cluster", "cores_per_node"),
        r"cluster.cores_per_node: must be an integer >= 1, got None",
        id="missing-cores",
    ),
    pytest.param(
        _with("cluster", memory_per_node="lots"),
        r"cluster.memory_per_node: must be a size such as 64GiB.*got 'lots'",
        id="bad-size",
    ),
    pytest.param(
        _with("cluster", memory_per_node=64),
        r"cluster.memory_per_node: must be a size .*got 64",
        id="size-without-unit",
    ),
    pytest.param(
        _with("cluster", manager="ssh"), r"cluster.hosts: is required with manager: ssh", id="ssh-without-hosts"
    ),
    pytest.param(
        _with("cluster", hosts=["a", "b"]), r"cluster.nodes: is 1 but cluster.hosts lists 2 hosts", id="hosts-vs-nodes"
    ),
    pytest.param(
        _with("sizing", rule="cloudera"),
        r"sizing.rule: must be one of report, spark-default, got 'cloudera'",
        id="unknown-rule",
    ),
    pytest.param(
        _with("sizing", cores_per_executor=[]),
        r"sizing.cores_per_executor: must not be an empty list",
        id="empty-cores-list",
    ),
    pytest.param(
        _with("sizing", cores_per_executor=[0]),
        r"sizing.cores_per_executor: must be an integer >= 1, got 0",
        id="zero-cores",
    ),
    pytest.param(
        _with("sizing", cores_per_executor=[1, 4]),
        r"sizing.cores_per_executor\[1\]: 4 is more than the 2 cores of a node",
        id="cores-over-node",
    ),
    pytest.param(
        _with("sizing", cores_per_executor=[1, 1]),
        r"sizing.cores_per_executor: lists a value twice",
        id="duplicate-cores",
    ),
    pytest.param(
        _with("sizing", application_master=2, cores_per_executor=[2]),
        r"sizing.cores_per_executor: .*leave no executor",
        id="am-takes-everything",
    ),
    pytest.param(
        _with("sizing", cores_per_executor=[2], reserve={"cores": 1, "memory": "1GiB"}),
        r"sizing.cores_per_executor: .*do not fit in the 1 usable",
        id="cores-over-usable",
    ),
    pytest.param(
        {**minimal_grid(), "cluster": {"manager": "local", "nodes": 1, "cores_per_node": 2, "memory_per_node": "2GiB"}},
        r"sizing.cores_per_executor: .*at least 1 GiB is needed",
        id="executor-memory-under-1gib",
    ),
    pytest.param(
        _with("sizing", reserve={"cores": 2}), r"sizing.reserve.cores: 2 leaves no core", id="reserve-all-cores"
    ),
    pytest.param(
        _with("sizing", reserve={"memory": "9GiB"}),
        r"sizing.reserve.memory: '9GiB' leaves no memory",
        id="reserve-all-memory",
    ),
    pytest.param(
        _with("sizing", reserve={"cpus": 1}), r"sizing.reserve.cpus: unknown key 'cpus'", id="unknown-reserve-key"
    ),
    pytest.param(
        {**minimal_grid(), "engines": ["ray"]},
        r"engines\[0\]: must be one of spark, dask, spark-mllib, got 'ray'",
        id="unknown-engine",
    ),
    pytest.param({**minimal_grid(), "engines": []}, r"engines: must be a non-empty list", id="no-engines"),
    pytest.param(
        {**minimal_grid(), "engines": ["dask", "dask"]}, r"engines: lists an engine twice", id="duplicate-engine"
    ),
    pytest.param(
        {**minimal_grid(), "baseline": "maybe"},
        r"baseline: must be true or false, got 'maybe'",
        id="baseline-not-boolean",
    ),
    pytest.param(
        _with("workload", dataset="cifar10"), r"workload.dataset: 'cifar10' is neither a dataset", id="unknown-dataset"
    ),
    pytest.param(
        _with("workload", dataset={"name": "emnist"}),
        r"workload.dataset.name: must be one of digits, mnist, fashion-mnist",
        id="unknown-dataset-name",
    ),
    pytest.param(
        _with("workload", epochs=[10, 0]), r"workload.epochs: must be an integer >= 1, got 0", id="zero-epochs"
    ),
    pytest.param(_with("workload", epochs=[]), r"workload.epochs: must not be an empty list", id="empty-epochs"),
    pytest.param(_with("workload", epochs=[10, 10]), r"workload.epochs: lists a value twice", id="duplicate-epochs"),
    pytest.param(
        _with("workload", trials="3"), r"workload.trials: must be an integer >= 1, got '3'", id="trials-string"
    ),
    pytest.param(
        _with("workload", mode="bagging"),
        r"workload.mode: must be one of replicas, cv, search, data-parallel, got 'bagging'",
        id="unknown-mode",
    ),
    pytest.param(
        _with("workload", folds=1, mode="cv"), r"workload.folds: must be an integer >= 2, got 1", id="one-fold"
    ),
    pytest.param(
        _with("workload", mode="search"),
        r"workload.param_grid: is required with mode: search",
        id="search-without-grid",
    ),
    pytest.param(
        _with("workload", param_grid={"alpha": [0.1]}),
        r"workload.param_grid: only applies to mode: search",
        id="grid-without-search",
    ),
    pytest.param(
        _with("workload", fraction=1.5),
        r"workload.fraction: must be a number in \(0.0, 1.0\], got 1.5",
        id="fraction-over-one",
    ),
    pytest.param(
        _with("workload", threads_per_fit=0),
        r"workload.threads_per_fit: must be an integer >= 1, got 0",
        id="zero-threads",
    ),
    pytest.param(
        _with("workload", model={"hidden_layers": [10]}),
        r"workload.model.hidden_layers: unknown key .*did you mean 'hidden_layer_sizes'",
        id="unknown-model-param",
    ),
    pytest.param(
        _with("workload", model={"solver": "sgdd"}),
        r"workload.model.solver: The 'solver' parameter of MLPClassifier must be a str among",
        id="bad-solver",
    ),
    pytest.param(
        _with("workload", model={"max_iter": 5}), r"workload.model.max_iter: is set by the sweeper", id="max-iter-owned"
    ),
    pytest.param(
        _with("workload", model={"hidden_layer_sizes": [100, -5]}),
        r"workload.model.hidden_layer_sizes: must be positive layer widths",
        id="negative-layer",
    ),
    pytest.param(
        _with("workload", epoch=[10]),
        r"workload.epoch: unknown key 'epoch'; did you mean 'epochs'",
        id="unknown-workload-key",
    ),
    pytest.param(
        {**minimal_grid(), "exclude": [{"engines": "spark"}]},
        r"exclude\[0\].engines: unknown key 'engines'; did you mean 'engine'",
        id="bad-exclude-axis",
    ),
    pytest.param(
        {**minimal_grid(), "exclude": {"engine": "spark"}},
        r"exclude: must be a list of mappings",
        id="exclude-not-list",
    ),
    pytest.param(
        {**minimal_grid(), "environment": {"OMP_NUM_THREADS": [1]}},
        r"environment.OMP_NUM_THREADS: must be a string or number",
        id="bad-environment",
    ),
    pytest.param(
        {**minimal_grid(), "spark_conf": {"spark.executor.cores": 4}},
        r"spark_conf.spark.executor.cores: is set from the plan for every launch",
        id="spark-conf-owned-key",
    ),
    pytest.param(
        {**minimal_grid(), "spark_conf": {"executor.cores": 4}},
        r"spark_conf.executor.cores: must be a Spark property \(a name starting with 'spark.'\)",
        id="spark-conf-not-spark",
    ),
    pytest.param(
        {**minimal_grid(), "spark_conf": {"spark.driver.port": [1, 2]}},
        r"spark_conf.spark.driver.port: must be a string, number or boolean, got \[1, 2\]",
        id="spark-conf-list",
    ),
    pytest.param(
        _with("workload", start_timeout_s=-5),
        r"workload.start_timeout_s: must be a number in \(0.0, 86400.0\], got -5",
        id="start-timeout-negative",
    ),
    pytest.param("name: t\ncluster: {nodes: 1\n", r"YAML syntax error at line 3", id="yaml-syntax"),
]


@pytest.mark.parametrize(("content", "match"), MALFORMED)
def test_malformed_grid_exits_2_naming_the_key(
    content: Any, match: str, write_grid: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_grid(content)
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err
    assert re.search(match, " ".join(err.split())), err
    assert "Traceback" not in err


def test_missing_file_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "no/such/grid.yaml"]) == 2
    assert "no/such/grid.yaml: no such grid file" in capsys.readouterr().err


def test_all_problems_of_a_file_are_reported_together(write_grid: Callable[..., Path]) -> None:
    grid = _with("cluster", nodes=0, memory_per_node="lots")
    grid["engines"] = ["ray"]
    with pytest.raises(UserError) as caught:
        grid_file.load(write_grid(grid))
    keys = [problem.split(": ")[1] for problem in caught.value.problems]
    assert keys == ["cluster.nodes", "cluster.memory_per_node", "engines[0]"]


def test_malformed_grid_from_the_real_command_line_has_no_traceback(write_grid: Callable[..., Path]) -> None:
    path = write_grid(_with("cluster", nodes=-1))
    result = run_cli("plan", str(path))
    assert result.returncode == 2
    assert "cluster.nodes" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


@pytest.mark.parametrize("size", ["8GiB", "8G", "8g", "8192MiB", "8192m", "8192M"])
def test_sizes_in_every_documented_form_mean_the_same(size: str, write_grid: Callable[..., Path]) -> None:
    grid = grid_file.load(write_grid(_with("cluster", memory_per_node=size)))
    assert grid.cluster.memory_per_node_mib == 8192


def test_more_than_five_cores_per_executor_warns_but_plans(write_grid: Callable[..., Path]) -> None:
    grid = minimal_grid(cluster={"manager": "yarn", "nodes": 2, "cores_per_node": 24, "memory_per_node": "64GiB"})
    grid["sizing"] = {"cores_per_executor": [5, 6]}
    loaded = grid_file.load(write_grid(grid))
    assert loaded.cores_per_executor == (5, 6)
    assert len(loaded.warnings) == 1 and "sizing.cores_per_executor[1]" in loaded.warnings[0]


def test_model_lists_are_axes_but_a_layer_list_is_one_value(write_grid: Callable[..., Path]) -> None:
    grid = _with("workload", model={"hidden_layer_sizes": [64, 32], "alpha": [0.0001, 0.01]})
    axes = dict(grid_file.load(write_grid(grid)).workload.model_axes)
    assert axes["hidden_layer_sizes"] == ((64, 32),)
    assert axes["alpha"] == (0.0001, 0.01)
    grid = _with("workload", model={"hidden_layer_sizes": [[64], [64, 32]]})
    axes = dict(grid_file.load(write_grid(grid)).workload.model_axes)
    assert axes["hidden_layer_sizes"] == ((64,), (64, 32))


def test_grid_hash_ignores_name_and_store_but_not_the_workload(write_grid: Callable[..., Path]) -> None:
    first = grid_file.load(write_grid(minimal_grid(), "a.yaml"))
    renamed = grid_file.load(write_grid({**minimal_grid(), "name": "other", "store": "elsewhere/"}, "b.yaml"))
    changed = grid_file.load(write_grid(_with("workload", epochs=[6]), "c.yaml"))
    assert first.grid_hash == renamed.grid_hash != changed.grid_hash


@pytest.mark.parametrize("shipped", sorted(str(p) for p in (Path(__file__).parent.parent / "grids").glob("*.yaml")))
def test_shipped_grids_are_valid(shipped: str) -> None:
    assert grid_file.load(shipped).name


def test_spark_conf_and_start_timeout_are_read(write_grid: Callable[..., Path]) -> None:
    raw = minimal_grid(
        spark_conf={"spark.network.timeout": "300s", "spark.rdd.compress": True, "spark.port.maxRetries": 4}
    )
    raw["workload"] = {**raw["workload"], "start_timeout_s": 30}
    grid = grid_file.load(write_grid(raw))
    assert dict(grid.spark_conf) == {
        "spark.network.timeout": "300s",
        "spark.rdd.compress": "true",
        "spark.port.maxRetries": "4",
    }
    assert grid.workload.start_timeout_s == 30
    assert grid_file.load(write_grid(minimal_grid())).workload.start_timeout_s == 180


def _ssh_grid(**ssh: Any) -> dict[str, Any]:
    return _with("cluster", manager="ssh", hosts=["node1"], ssh=ssh)


@pytest.mark.parametrize(
    ("ssh", "match"),
    [
        pytest.param({"dask_tls": "yes"}, r"cluster.ssh.dask_tls: must be true or false, got 'yes'", id="tls-string"),
        pytest.param({"dask_tls": 1}, r"cluster.ssh.dask_tls: must be true or false, got 1", id="tls-number"),
        pytest.param({"dask_tsl": True}, r"cluster.ssh.dask_tsl: unknown key .*did you mean 'dask_tls'", id="tls-typo"),
        pytest.param({"driver_host": ""}, r"cluster.ssh.driver_host: must be this .*got ''", id="driver-empty"),
        pytest.param({"driver_host": "0.0.0.0"}, r"cluster.ssh.driver_host: .*not 0.0.0.0", id="driver-wildcard"),
        pytest.param({"driver_host": ["a"]}, r"cluster.ssh.driver_host: .*got \['a'\]", id="driver-list"),
        pytest.param({"driver_host": "a b"}, r"cluster.ssh.driver_host: .*got 'a b'", id="driver-space"),
    ],
)
def test_bad_ssh_tls_and_driver_host_exit_2_naming_the_key(
    ssh: dict[str, Any], match: str, write_grid: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_grid(_ssh_grid(**ssh))
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and re.search(match, " ".join(err.split())), err
    assert "Traceback" not in err


def test_ssh_tls_and_driver_host_reach_the_ssh_cluster(write_grid: Callable[..., Path]) -> None:
    from sweeper.engines.ssh_hosts import SshCluster

    loaded = grid_file.load(write_grid(_ssh_grid(dask_tls=True, driver_host="10.0.0.1", port=2222)))
    cluster = SshCluster.from_grid(loaded)
    assert (cluster.dask_tls, cluster.driver_address(), cluster.options.port) == (True, "10.0.0.1", 2222)
    default = SshCluster.from_grid(grid_file.load(write_grid(_ssh_grid(), "plain.yaml")))
    assert default.dask_tls is False and default.driver_host is None
    # without driver_host: this machine's address on the route to the first host (loopback to itself)
    assert SshCluster(hosts=("127.0.0.1",)).driver_address() == "127.0.0.1"


YARN_CLUSTER = {"manager": "yarn", "nodes": 2, "cores_per_node": 2, "memory_per_node": "8GiB"}


@pytest.mark.parametrize(
    ("archive", "cluster", "match"),
    [
        pytest.param("missing.tar.gz", YARN_CLUSTER, r"'missing.tar.gz' is not a file \(make one with: sweeper pack",
                     id="missing"),
        pytest.param("env.rar", YARN_CLUSTER, r"'env.rar' must end with one of .tar.gz, .tgz, .tar, .zip",
                     id="suffix"),
        pytest.param(7, YARN_CLUSTER, r"must be the path of a packed environment .*got 7", id="not-a-path"),
        pytest.param("env.tar.gz", {**YARN_CLUSTER, "manager": "local"},
                     r"only applies to manager: yarn, got manager: local", id="not-yarn"),
    ],
)  # fmt: skip
def test_a_bad_python_archive_exits_2_naming_the_key(
    archive: Any, cluster: dict[str, Any], match: str, write_grid: Callable[..., Path],
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    (tmp_path / "env.tar.gz").write_bytes(b"")
    (tmp_path / "env.rar").write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    path = write_grid(minimal_grid(cluster={**cluster, "python_archive": archive}))
    assert main(["plan", str(path)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"{path}: cluster.python_archive: " in err
    assert re.search(match, err), err
    assert "Traceback" not in err


@pytest.mark.parametrize("name", ["env.tar.gz", "env.tgz", "env.tar", "env.zip"])
def test_a_python_archive_is_kept_as_an_absolute_path(
    name: str, write_grid: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / name).write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    grid = grid_file.load(write_grid(minimal_grid(cluster={**YARN_CLUSTER, "python_archive": name})))
    assert grid.python_archive == str(tmp_path / name)
    assert grid_file.load(write_grid(minimal_grid(cluster=YARN_CLUSTER), "plain.yaml")).python_archive is None

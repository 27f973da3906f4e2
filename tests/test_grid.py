"""Grid validation: every malformed grid is rejected with exit code 2 and a message naming the key."""

from __future__ import annotations

import copy
import datetime
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from sweeper.cli import main
from sweeper.config import load as grid_file
from sweeper.config.names import check_sweep_name
from sweeper.config.schema import MAX_AXIS_VALUES, MAX_PROBLEMS
from sweeper.errors import UserError
from sweeper.launch.options import StandaloneOptions, options_for
from sweeper.text import shown
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
        {k: v for k, v in minimal_grid().items() if k != "name"},
        "name: must be one directory name .*it is missing",
        id="missing-name",
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
    pytest.param(
        _with("cluster", nodes=0), r"cluster.nodes: must be an integer from 1 to 10000, got 0", id="zero-nodes"
    ),
    pytest.param(
        _with("cluster", nodes=-2), r"cluster.nodes: must be an integer from 1 to 10000, got -2", id="negative-nodes"
    ),
    pytest.param(
        _with("cluster", nodes="two"),
        r"cluster.nodes: must be an integer from 1 to 10000, got 'two'",
        id="nodes-not-a-number",
    ),
    pytest.param(
        _with("cluster", nodes=True), r"cluster.nodes: must be an integer from 1 to 10000, got True", id="nodes-boolean"
    ),
    pytest.param(
        _without("cluster", "cores_per_node"),
        r"cluster.cores_per_node: must be an integer from 1 to 4096, got None",
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
        r"sizing.cores_per_executor: must be an integer from 1 to 4096, got 0",
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
        {**minimal_grid(), "engines": ["flink"]},
        r"engines: must be one of spark, dask, spark-mllib, ray, got 'flink'",
        id="unknown-engine",
    ),
    pytest.param({**minimal_grid(), "engines": []}, r"engines: must be a non-empty list", id="no-engines"),
    pytest.param(
        {**minimal_grid(), "engines": ["dask", "dask"]}, r"engines: lists a value twice", id="duplicate-engine"
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
        _with("workload", epochs=[10, 0]),
        r"workload.epochs\[1\]: must be an integer from 1 to 1000000, got 0",
        id="zero-epochs",
    ),
    pytest.param(_with("workload", epochs=[]), r"workload.epochs: must not be an empty list", id="empty-epochs"),
    pytest.param(_with("workload", epochs=[10, 10]), r"workload.epochs: lists a value twice", id="duplicate-epochs"),
    pytest.param(
        _with("workload", trials="3"),
        r"workload.trials: must be an integer from 1 to 1000, got '3'",
        id="trials-string",
    ),
    pytest.param(
        _with("workload", mode="bagging"),
        r"workload.mode: must be one of replicas, cv, search, data-parallel, got 'bagging'",
        id="unknown-mode",
    ),
    pytest.param(
        _with("workload", folds=1, mode="cv"),
        r"workload.folds: must be an integer from 2 to 100, got 1",
        id="one-fold",
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
        r"workload.fraction: must be a number in \(0, 1\], got 1.5",
        id="fraction-over-one",
    ),
    pytest.param(
        _with("workload", threads_per_fit=0),
        r"workload.threads_per_fit: must be an integer from 1 to 4096, got 0",
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
        r"workload.model.hidden_layer_sizes: must be 1 to 100 layer widths from 1 to 100000",
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
        r"environment.OMP_NUM_THREADS: must be a string of at most 32768 characters, a finite number",
        id="bad-environment",
    ),
    pytest.param(
        {**minimal_grid(), "spark_conf": {"spark.executor.cores": 4}},
        r"spark_conf.spark.executor.cores: is set from the plan for every launch",
        id="spark-conf-owned-key",
    ),
    pytest.param(
        {**minimal_grid(), "spark_conf": {"executor.cores": 4}},
        r"spark_conf.executor.cores: must be a Spark property name \(starting with 'spark.'",
        id="spark-conf-not-spark",
    ),
    pytest.param(
        {**minimal_grid(), "spark_conf": {"spark.driver.port": [1, 2]}},
        r"spark_conf.spark.driver.port: must be a string .*, a finite number or a boolean, got \[1, 2\]",
        id="spark-conf-list",
    ),
    pytest.param(
        _with("workload", start_timeout_s=-5),
        r"workload.start_timeout_s: must be a number in \(0, 86400\], got -5",
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
    grid["engines"] = ["flink"]
    with pytest.raises(UserError) as caught:
        grid_file.load(write_grid(grid))
    keys = [problem.split(": ")[1] for problem in caught.value.problems]
    assert keys == ["cluster.nodes", "cluster.memory_per_node", "engines"]


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


def test_numbers_written_with_an_exponent_are_floats_as_in_yaml_1_2(write_grid: Callable[..., Path]) -> None:
    grid = yaml.safe_dump(_with("workload", model={"hidden_layer_sizes": [16]}))
    text = grid.replace("hidden_layer_sizes:", "alpha: 1e-4\n    learning_rate_init: 1E-3\n    hidden_layer_sizes:")
    path = write_grid(text)
    assert "alpha: 1e-4" in path.read_text()  # written as users write it, unquoted
    axes = dict(grid_file.load(path).workload.model_axes)
    assert axes["alpha"] == (0.0001,) and axes["learning_rate_init"] == (0.001,)


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
        pytest.param(
            {"dask_tls": "yes"},
            r"cluster.ssh.dask_tls: must be true or false \(a YAML boolean: write it without quotes\), got 'yes'",
            id="tls-string",
        ),
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
    from sweeper.launch.hosts.ssh import SshCluster, driver_address

    loaded = grid_file.load(write_grid(_ssh_grid(dask_tls=True, driver_host="10.0.0.1", port=2222)))
    cluster = SshCluster.from_grid(loaded)
    assert (cluster.dask_tls, driver_address(cluster), cluster.options.port) == (True, "10.0.0.1", 2222)
    default = SshCluster.from_grid(grid_file.load(write_grid(_ssh_grid(), "plain.yaml")))
    assert default.dask_tls is False and default.driver_host is None
    # without driver_host: this machine's address on the route to the first host (loopback to itself)
    assert driver_address(SshCluster(hosts=("127.0.0.1",))) == "127.0.0.1"


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
    assert grid.cluster_key("python_archive") == str(tmp_path / name)
    assert (
        grid_file.load(write_grid(minimal_grid(cluster=YARN_CLUSTER), "plain.yaml")).cluster_key("python_archive")
        is None
    )


# --- hardening (issue 12): every family of hostile input is refused by one mechanism ---------------------------------


def _problems(raw: dict[str, Any], path: Path = Path("grid.yaml")) -> str:
    """The problems parse() reports for a document, as one line."""
    with pytest.raises(UserError) as caught:
        grid_file.parse(raw, path)
    return str(caught.value)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        pytest.param(".", "it is '.'", id="dot"),
        pytest.param("..", "it is '..'", id="dot-dot"),
        pytest.param("a/b", "it contains '/'", id="slash"),
        pytest.param("../../etc", "it contains '/'", id="traversal"),
        pytest.param("a\\b", "it contains '\\\\'", id="backslash"),
        pytest.param("a\x00b", "it contains '\\x00'", id="nul"),
        pytest.param("a\nb", "it contains '\\n'", id="newline"),
        pytest.param("a\u202eb", "it contains '\\u202e'", id="bidi-override"),
        pytest.param("-rf", "it starts with '-'", id="leading-dash"),
        pytest.param("", "it is blank", id="empty"),
        pytest.param("   ", "it is blank", id="blank"),
        pytest.param("x" * 101, "it has 101 characters", id="101-chars"),
        pytest.param("\U0001d4b3" * 64, "it is longer than 255 bytes in UTF-8", id="256-bytes"),
        pytest.param(2024, "it is not a string", id="number"),
        pytest.param(["a"], "it is not a string", id="list"),
    ],
)
def test_a_sweep_name_must_be_one_safe_directory_name(name: Any, reason: str) -> None:
    problem = check_sweep_name(name)
    assert problem is not None and problem.startswith("must be one directory name (1 to 100 characters")
    assert f": {reason}, got " in problem
    assert f"{Path('g.yaml')}: name: {problem}" in _problems({**minimal_grid(), "name": name}, Path("g.yaml"))


@pytest.mark.parametrize("name", ["2node", "sweep-1.2_x", "résumé", "a b", "x" * 100, "é" * 100])
def test_ordinary_sweep_names_are_accepted(name: str) -> None:
    assert check_sweep_name(name) is None
    assert grid_file.parse({**minimal_grid(), "name": name}, Path("g.yaml")).name == name


SHELL_KEYS = [
    ("cluster", "remote_dir"),
    ("cluster", "python"),
    ("cluster", "java_home"),
    ("cluster", "queue"),
    ("cluster", "hadoop_conf_dir"),
    ("cluster.ssh", "identity_file"),
    ("cluster.ssh", "known_hosts"),
]


def _ssh_cluster(**values: Any) -> dict[str, Any]:
    ssh = values.pop("ssh", {})
    cluster = {"manager": "ssh", "hosts": ["node1"], "cores_per_node": 2, "memory_per_node": "8GiB", "ssh": ssh}
    return minimal_grid(cluster={**cluster, **values})


def _with_shell_value(section: str, key: str, value: Any) -> dict[str, Any]:
    return _ssh_cluster(ssh={key: value}) if section == "cluster.ssh" else _ssh_cluster(**{key: value})


@pytest.mark.parametrize("char", ["'", '"', "$", "`", ";", "&", "|", "<", ">", "\\", "\n", "\r", "\x00", "\x1b"])
@pytest.mark.parametrize(("section", "key"), SHELL_KEYS)
def test_a_value_that_reaches_a_remote_shell_refuses_shell_characters(section: str, key: str, char: str) -> None:
    value = f"/opt/a{char}b"
    err = _problems(_with_shell_value(section, key, value))
    assert f"{section}.{key}: must not contain quotes, $, backticks" in err
    assert f"(it reaches a command line), got {char!r} in {value!r}" in err, err


def test_the_issues_remote_dir_injection_is_refused_before_anything_starts(
    write_grid: Callable[..., Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    marker = tmp_path / "X"
    remote_dir = f"/tmp/a'; touch {marker}; echo '"
    raw = {**_ssh_cluster(hosts=["127.0.0.1"], remote_dir=remote_dir), "store": str(tmp_path / "store")}
    path = write_grid(raw)
    for command in (["plan", str(path)], ["run", str(path)]):
        assert main(command) == 2
        err = " ".join(capsys.readouterr().err.split())
        assert f"{path}: cluster.remote_dir: must not contain quotes" in err
        assert f"""got "'" in {shown(remote_dir)}""" in err
    assert not marker.exists() and not (tmp_path / "store").exists()


@pytest.mark.parametrize(("section", "key"), SHELL_KEYS)
def test_ordinary_paths_reach_the_grid_unchanged(section: str, key: str) -> None:
    value = "~/.ssh/id_ed25519" if section == "cluster.ssh" else "/opt/sweeper env/bin-3.11_x+y,z@1"
    grid = grid_file.parse(_with_shell_value(section, key, value), Path("g.yaml"))
    assert (dict(grid.cluster_key("ssh")) if section == "cluster.ssh" else {key: grid.cluster_key(key)})[key] == value


# What OpenSSH itself refuses (ssh.c): a leading '-', whitespace, control and shell characters; a host has no '/',
# ':' (but in an IPv6 address), '@' or ','. Each with the reason the message gives.
BAD_HOSTS = [
    pytest.param("-oProxyCommand=touch X", "it starts with '-'", id="option"),
    pytest.param("-1.2.3.4", "it starts with '-'", id="dash-address"),
    pytest.param("a b", "it contains ' '", id="space"),
    pytest.param("a\tb", "it contains '\\t'", id="tab"),
    pytest.param("a\u202eb", "it contains '\\u202e'", id="bidi"),
    pytest.param("", "it is empty", id="empty"),
    pytest.param("host;id", "it contains ';'", id="semicolon"),
    pytest.param("$(id)", "it contains '$'", id="command-substitution"),
    pytest.param("a`id`", "it contains '`'", id="backtick"),
    pytest.param("a'b", 'it contains "\'"', id="quote"),
    pytest.param("a(b)", "it contains '('", id="parenthesis"),
    pytest.param("a\\b", "it contains '\\\\'", id="backslash"),
    pytest.param("fe80::1%$(id)", "it contains ':'", id="bad-zone"),
    pytest.param("node:22", "it contains ':'", id="port"),
    pytest.param("root@node1", "it contains '@'", id="user-at"),
    pytest.param("a/b", "it contains '/'", id="slash"),
    pytest.param("a,b", "it contains ','", id="comma"),
    pytest.param("x" * 256, "it has 256 characters", id="256-chars"),
    pytest.param(5, "it is not a string", id="number"),
]


@pytest.mark.parametrize(("host", "reason"), BAD_HOSTS)
def test_hosts_and_driver_host_refuse_what_ssh_or_a_shell_would_interpret(host: Any, reason: str) -> None:
    err = _problems(_ssh_cluster(hosts=["node1", host], nodes=2))
    assert "cluster.hosts[1]: must be a host name or IP address (1 to 255 characters, not starting with '-'" in err
    assert f"{reason}, got {shown(host)}" in err, err
    err = _problems(_ssh_cluster(ssh={"driver_host": host}))
    assert "cluster.ssh.driver_host: must be this machine's host name or IP address as the hosts reach it" in err


GOOD_HOSTS = [
    *("node1", "node-1.example.org", "NODE1.", "x" * 63),
    *("node_1.lan", "my_app_1", "a..b", "x" * 64, "x" * 255, "1node", "nœud"),  # /etc/hosts, Docker, IDN names
    *("10.0.0.2", "::1", "fe80::1%eth0", "2001:db8::a"),
]


@pytest.mark.parametrize("host", GOOD_HOSTS)
def test_host_names_and_addresses_are_accepted(host: str) -> None:
    grid = grid_file.parse(_ssh_cluster(hosts=[host], ssh={"driver_host": host}), Path("g.yaml"))
    assert grid.cluster_key("hosts") == (host,) and dict(grid.cluster_key("ssh"))["driver_host"] == host


@pytest.mark.parametrize(
    ("user", "reason"),
    [
        pytest.param("-oProxyCommand=x", "it starts with '-'", id="option"),
        pytest.param("root;id", "it contains ';'", id="semicolon"),
        pytest.param("a b", "it contains ' '", id="space"),
        pytest.param("a\nb", "it contains '\\n'", id="newline"),
        pytest.param("$(id)", "it contains '$'", id="command-substitution"),
        pytest.param("a|b", "it contains '|'", id="pipe"),
        pytest.param("CORP\\john", "it contains '\\\\'", id="backslash"),
        pytest.param("", "it is empty", id="empty"),
        pytest.param("x" * 256, "it has 256 characters", id="256-chars"),
        pytest.param(1000, "it is not a string", id="number"),
        pytest.param(None, "it is not a string", id="null"),
    ],
)
def test_the_ssh_user_refuses_what_ssh_or_a_shell_would_interpret(user: Any, reason: str) -> None:
    err = _problems(_ssh_cluster(ssh={"user": user}))
    assert (
        "cluster.ssh.user: must be a user name (1 to 255 characters, not starting with '-', without whitespace" in err
    )
    assert f"{reason}, got {shown(user)}" in err, err


@pytest.mark.parametrize(
    "user", ["sweeper", "Admin_1", "_svc", "a.b-c", "x" * 32, "1ops", "john.doe@corp.example.com", "x" * 255, "jöns"]
)
def test_user_names_of_posix_sssd_and_active_directory_are_accepted(user: str) -> None:
    assert dict(grid_file.parse(_ssh_cluster(ssh={"user": user}), Path("g.yaml")).cluster_key("ssh"))["user"] == user


@pytest.mark.parametrize(
    ("ssh", "match"),
    [
        pytest.param({"port": 0}, r"cluster.ssh.port: must be an integer from 1 to 65535, got 0", id="port-0"),
        pytest.param(
            {"port": 65536}, r"cluster.ssh.port: must be an integer from 1 to 65535, got 65536", id="port-big"
        ),
        pytest.param({"port": "22"}, r"cluster.ssh.port: must be an integer .*got '22'", id="port-string"),
        pytest.param({"port": 22.0}, r"cluster.ssh.port: must be an integer .*got 22.0", id="port-float"),
        pytest.param({"port": True}, r"cluster.ssh.port: must be an integer .*got True", id="port-bool"),
        pytest.param({"connect_timeout_s": 0}, r"connect_timeout_s: must be a number in \(0, 3600\], got 0", id="t0"),
        pytest.param({"connect_timeout_s": 3601}, r"connect_timeout_s: must be a number .*got 3601", id="t-big"),
        pytest.param({"connect_timeout_s": "10"}, r"connect_timeout_s: must be a number .*got '10'", id="t-string"),
        pytest.param(
            {"strict_host_key_checking": "false"},
            r"strict_host_key_checking: must be true or false \(a YAML boolean: write it without quotes\), got 'false'",
            id="strict-string",
        ),
        pytest.param(
            {"strict_host_key_checking": None}, r"strict_host_key_checking: must be true or false, got None", id="null"
        ),
    ],
)
def test_ssh_port_timeout_and_host_key_checking_are_validated(ssh: dict[str, Any], match: str) -> None:
    assert re.search(match, _problems(_ssh_cluster(ssh=ssh)))


def test_valid_ssh_settings_reach_the_ssh_options() -> None:
    from sweeper.launch.hosts.ssh import SshOptions

    ssh = {"port": 65535, "connect_timeout_s": 0.5, "strict_host_key_checking": False, "user": "sweeper"}
    options = SshOptions.from_grid(grid_file.parse(_ssh_cluster(ssh=ssh), Path("g.yaml")).cluster_key("ssh"))
    assert (options.port, options.connect_timeout_s, options.strict_host_key_checking) == (65535, 0.5, False)
    assert options.user == "sweeper"


NON_FINITE = [float("nan"), float("inf"), float("-inf")]


def _at(raw: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    """``raw`` with the value at a dotted key path replaced (a mapping made where the path has none)."""
    raw = copy.deepcopy(raw)
    *parents, last = dotted.split(".")
    section = raw
    for parent in parents:
        if not isinstance(section.get(parent), dict):
            section[parent] = {}
        section = section[parent]
    section[last] = value
    return raw


@pytest.mark.parametrize("value", NON_FINITE, ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize(
    "key",
    [
        "workload.fraction",
        "workload.test_size",
        "workload.timeout_s",
        "workload.start_timeout_s",
        "workload.model.alpha",
        "workload.model.learning_rate_init",
        "cluster.ssh.connect_timeout_s",
        "spark_conf.spark.network.timeout",
        "environment.OMP_NUM_THREADS",
        "workload.epochs",
        "cluster.nodes",
    ],
)
def test_nan_and_infinity_are_refused_wherever_a_number_is_expected(key: str, value: float) -> None:
    raw = _at(_ssh_cluster() if key.startswith("cluster.ssh") else minimal_grid(), key, value)
    if key == "spark_conf.spark.network.timeout":
        raw["spark_conf"] = {"spark.network.timeout": value}
    assert f"grid.yaml: {key}: " in _problems(raw)


def test_nan_in_an_exclude_rule_is_refused() -> None:
    err = _problems({**minimal_grid(), "exclude": [{"fraction": float("nan")}]})
    assert "exclude[0].fraction: must be a value (a number, string, boolean or null) or a list of values" in err
    assert err.endswith("got nan")


@pytest.mark.parametrize(
    ("key", "too_big", "maximum"),
    [
        ("cluster.nodes", 10_001, 10_000),
        ("cluster.cores_per_node", 4097, 4096),
        ("workload.epochs", 1_000_001, 1_000_000),
        ("workload.trials", 1001, 1000),
        ("workload.folds", 101, 100),
        ("workload.n_fits", 10_001, 10_000),
        ("workload.local_epochs", 10_001, 10_000),
        ("workload.shards", 10_001, 10_000),
        ("workload.threads_per_fit", 4097, 4096),
        ("workload.seed", 2**31, 2**31 - 1),
        ("sizing.reserve.cores", 4097, 4096),
        ("sizing.application_master", 1001, 1000),
        ("sizing.cores_per_executor", 4097, 4096),
    ],
)
def test_every_integer_has_an_upper_bound(key: str, too_big: int, maximum: int) -> None:
    for value in (too_big, 10**400):
        err = _problems(_at(minimal_grid(), key, value))
        assert f"{key}: must be an integer from " in err and f" to {maximum}, got " in err, err


def test_integers_at_their_bounds_are_accepted() -> None:
    raw = _with("workload", trials=1000, seed=2**31 - 1, folds=100, local_epochs=10_000, epochs=[1_000_000])
    workload = grid_file.parse(raw, Path("g.yaml")).workload
    assert (workload.trials, workload.seed, workload.folds, workload.epochs) == (1000, 2**31 - 1, 100, (1_000_000,))


@pytest.mark.parametrize("size", ["1025T", "99999999999999999999T", "2000000000G", "9" * 400 + "G"])
def test_memory_per_node_is_at_most_one_pib(size: str) -> None:
    err = _problems(_with("cluster", memory_per_node=size))
    assert "cluster.memory_per_node: must be a size such as 64GiB" in err and "at most 1024TiB" in err
    assert f"got {shown(size)}" in err


def test_one_pib_per_node_is_accepted() -> None:
    assert (
        grid_file.parse(_with("cluster", memory_per_node="1024T"), Path("g.yaml")).cluster.memory_per_node_mib == 2**30
    )


@pytest.mark.parametrize(
    ("layers", "ok"),
    [([100_000], True), ([100_001], False), ([1] * 100, True), ([1] * 101, False), ([10, 2.5], False)],
)
def test_hidden_layers_are_bounded(layers: list[Any], ok: bool) -> None:
    raw = _with("workload", model={"hidden_layer_sizes": layers})
    if ok:
        assert dict(grid_file.parse(raw, Path("g.yaml")).workload.model_axes)["hidden_layer_sizes"] == (tuple(layers),)
    else:
        assert "workload.model.hidden_layer_sizes: must be 1 to 100 layer widths from 1 to 100000" in _problems(raw)


@pytest.mark.parametrize(
    "name", ["spark.Master", "spark.master ", "SPARK.MASTER", " spark.executor.cores", "Spark.Cores.Max"]
)
def test_plan_owned_spark_properties_are_refused_whatever_their_case_and_spaces(name: str) -> None:
    err = _problems({**minimal_grid(), "spark_conf": {name: "x"}})
    assert f"spark_conf.{name}: is set from the plan for every launch; spark_conf may not set spark.master, " in err
    assert "(compared ignoring case and surrounding spaces)" in err


@pytest.mark.parametrize("name", ["spark.network timeout", "spark.a=b", "spark.x\ty", "spark.x\x00", "spark.", 7])
def test_a_spark_conf_key_must_be_a_spark_property_name(name: Any) -> None:
    err = _problems({**minimal_grid(), "spark_conf": {name: "x"}})
    assert "must be a Spark property name (starting with 'spark.', without spaces, '=' or control characters)" in err


@pytest.mark.parametrize("value", ["a\nb", "a\x00b", "a\rb"])
def test_a_spark_conf_value_with_a_newline_or_nul_is_refused(value: str) -> None:
    err = _problems({**minimal_grid(), "spark_conf": {"spark.driver.extraJavaOptions": value}})
    assert "spark_conf.spark.driver.extraJavaOptions: must not contain control characters" in err


def test_spark_properties_the_engines_merge_are_accepted() -> None:
    conf = {"spark.executor.extraJavaOptions": "-Dx=1", "spark.executorEnv.FOO": "bar", "spark.rdd.compress": False}
    grid = grid_file.parse({**minimal_grid(), "spark_conf": conf}, Path("g.yaml"))
    assert dict(grid.spark_conf) == {**conf, "spark.rdd.compress": "false"}


@pytest.mark.parametrize(
    "variable", ["OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "PYTHONHASHSEED", "MALLOC_TRIM_THRESHOLD_"]
)
def test_the_fit_environment_is_set_with_environment_not_spark_conf(variable: str) -> None:
    err = _problems({**minimal_grid(), "spark_conf": {f"spark.executorEnv.{variable}": "8"}})
    assert f"spark_conf.spark.executorEnv.{variable}: {variable} is part of the fit environment" in err
    assert "set it with environment:" in err


@pytest.mark.parametrize("name", ["1ABC", "A-B", "É", "A B", "", "A=B", 5])
def test_environment_names_must_be_variable_names(name: Any) -> None:
    err = _problems({**minimal_grid(), "environment": {name: "1"}})
    assert "must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*)" in err


def test_environment_values_with_nul_are_refused_and_others_kept() -> None:
    err = _problems({**minimal_grid(), "environment": {"OMP_NUM_THREADS": "1\x00"}})
    assert "environment.OMP_NUM_THREADS: must not contain NUL characters, got '\\x00' in '1\\x00'" in err
    environment = {"_A1": "x\ny", "MKL_NUM_THREADS": 1, "FLAG": True}
    grid = grid_file.parse({**minimal_grid(), "environment": environment}, Path("g.yaml"))
    assert dict(grid.environment) == {"_A1": "x\ny", "MKL_NUM_THREADS": "1", "FLAG": "True"}


@pytest.mark.parametrize("key", ["exclude", "only"])
@pytest.mark.parametrize(
    "value", [{"a": 1}, [{"a": 1}], [[10]], [], {1, 2}], ids=["mapping", "list-of-mappings", "nested", "empty", "set"]
)
def test_a_rule_value_must_be_a_value_or_a_list_of_values(key: str, value: Any) -> None:
    err = _problems({**minimal_grid(), key: [{"engine": "spark"}, {"epochs": value}]})
    assert f"{key}[1].epochs: must be a value (a number, string, boolean or null) or a list of values, got " in err


def test_rule_values_and_lists_of_values_are_accepted() -> None:
    rules = [{"engine": ["spark", "dask"], "epochs": 5}, {"model.hidden_layer_sizes": [100, 50], "model.beta_1": None}]
    assert grid_file.parse({**minimal_grid(), "exclude": rules}, Path("g.yaml")).exclude == tuple(rules)


def test_without_an_engines_key_the_engines_are_spark_and_dask() -> None:
    raw = {k: v for k, v in minimal_grid().items() if k != "engines"}
    assert grid_file.parse(raw, Path("g.yaml")).engines == ("spark", "dask")


def _mllib_grid(**model: Any) -> dict[str, Any]:
    return {**_with("workload", mode="data-parallel", model=model), "engines": ["spark", "spark-mllib"]}


def test_mllib_solver_is_accepted_and_reaches_spark_mls_solver() -> None:
    from sweeper.launch.spark import mllib
    from sweeper.planning.plan import make_plan
    from sweeper.workload.tasks import FitTask

    plan = make_plan(grid_file.parse(_mllib_grid(mllib_solver=["gd", "l-bfgs"]), Path("g.yaml")))
    [mllib_launch] = [launch for launch in plan.launches if launch.engine == "spark-mllib"]
    solvers = []
    for point in plan.points[mllib_launch.index]:
        task = FitTask(params=point.params, epochs=point.epochs, seed=0, exact_epochs=False, threads_per_fit=1)
        solvers.append(mllib.mllib_params(task, 64, 10)["solver"])
    assert solvers == ["gd", "l-bfgs"]


def test_mllib_solver_outside_mllibs_solvers_is_refused_and_it_is_an_exclude_axis() -> None:
    err = _problems(_mllib_grid(mllib_solver="adam"))
    assert "workload.model.mllib_solver: must be one of l-bfgs, gd, got 'adam'" in err
    raw = {**_mllib_grid(mllib_solver=["gd", "l-bfgs"]), "exclude": [{"model.mllib_solver": "gd", "engine": "spark"}]}
    assert grid_file.parse(raw, Path("g.yaml")).exclude == ({"model.mllib_solver": "gd", "engine": "spark"},)


def test_mllib_solver_without_the_spark_mllib_engine_warns() -> None:
    raw = {**_mllib_grid(mllib_solver="gd"), "engines": ["spark"]}
    [warning] = grid_file.parse(raw, Path("g.yaml")).warnings
    assert "workload.model.mllib_solver: only engine spark-mllib reads it" in warning


def test_a_dataset_path_must_be_a_regular_file_or_a_directory(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    err = _problems(_with("workload", dataset=str(fifo)))
    assert f"workload.dataset: {str(fifo)!r} must be a regular file or a directory, got a FIFO" in err
    assert "got a device" in _problems(_with("workload", dataset="/dev/null"))
    err = _problems(_with("workload", dataset={"name": "mnist", "path": str(fifo)}))
    assert f"workload.dataset.path: {str(fifo)!r} is not a directory of IDX files" in err
    (tmp_path / "data.npz").write_bytes(b"")
    for path in (tmp_path / "data.npz", tmp_path):
        assert grid_file.parse(_with("workload", dataset=str(path)), Path("g.yaml")).workload.dataset.path == str(path)


def test_a_dataset_path_the_file_system_refuses_is_an_error_not_a_traceback() -> None:
    for path in ("x" * 5000, "a/" + "b" * 300, "a\x00b"):
        assert "workload.dataset" in _problems(_with("workload", dataset=path))


def test_problems_past_the_cap_are_counted_not_listed() -> None:
    with pytest.raises(UserError) as caught:
        grid_file.parse(_with("workload", epochs=list(range(-199, 1))), Path("g.yaml"))
    assert len(caught.value.problems) == MAX_PROBLEMS + 1
    assert caught.value.problems[-1] == "g.yaml: and 150 more problems"


def _recursive_list() -> list[Any]:
    looped: list[Any] = []
    looped.append(looped)
    return looped


def _deep(depth: int) -> list[Any]:
    nested: list[Any] = []
    for _ in range(depth):
        nested = [nested]
    return nested


def _shared(levels: int) -> list[Any]:
    """A billion-laughs structure: 10**levels leaves from a few objects."""
    node: list[Any] = ["lol"]
    for _ in range(levels):
        node = [node] * 10
    return node


# every Python value a YAML loader can produce, and some it cannot
NASTY: list[Any] = [
    None,
    True,
    0,
    -1,
    10**400,
    1.5,
    float("nan"),
    float("inf"),
    "",
    "x" * 200_000,
    "\x00",
    "é\u202e\U0001f600",
    "-oProxyCommand=x",
    b"\x00bytes",
    datetime.date(2024, 1, 1),
    datetime.datetime(2024, 1, 1, 12, 0),
    [],
    {},
    [{"a": [1]}, {"b": {}}],
    [[1], [1]],
    {"x": [1], 1: None, None: 2, datetime.date(2024, 1, 1): b"", 1.5: "y"},
    {1, 2},
    frozenset({"a"}),
    (1, 2),
    _recursive_list(),
    _deep(5000),
    _shared(9),
]

NASTY_KEYS = [
    "name",
    "description",
    "cluster",
    "cluster.manager",
    "cluster.nodes",
    "cluster.cores_per_node",
    "cluster.memory_per_node",
    "cluster.hosts",
    "cluster.ssh",
    "cluster.ssh.user",
    "cluster.ssh.port",
    "cluster.ssh.identity_file",
    "cluster.ssh.known_hosts",
    "cluster.ssh.strict_host_key_checking",
    "cluster.ssh.connect_timeout_s",
    "cluster.ssh.driver_host",
    "cluster.ssh.dask_tls",
    "cluster.python",
    "cluster.remote_dir",
    "cluster.python_archive",
    "cluster.spark_master",
    "sizing",
    "sizing.rule",
    "sizing.cores_per_executor",
    "sizing.reserve",
    "sizing.reserve.cores",
    "sizing.reserve.memory",
    "sizing.application_master",
    "engines",
    "baseline",
    "workload",
    "workload.dataset",
    "workload.dataset.name",
    "workload.dataset.path",
    "workload.fraction",
    "workload.model",
    "workload.model.hidden_layer_sizes",
    "workload.model.solver",
    "workload.model.alpha",
    "workload.model.mllib_solver",
    "workload.epochs",
    "workload.trials",
    "workload.mode",
    "workload.folds",
    "workload.param_grid",
    "workload.param_grid.alpha",
    "workload.param_grid.hidden_layer_sizes",
    "workload.n_fits",
    "workload.shards",
    "workload.exact_epochs",
    "workload.timeout_s",
    "workload.seed",
    "workload.test_size",
    "exclude",
    "only",
    "store",
    "environment",
    "environment.A",
    "spark_conf",
    "spark_conf.spark.x",
]


def _ssh_base() -> dict[str, Any]:
    return _ssh_cluster(ssh={"user": "sweeper", "port": 22})


@pytest.mark.parametrize("key", NASTY_KEYS)
def test_any_value_anywhere_gives_a_grid_or_a_user_error_never_another_exception(key: str) -> None:
    """parse() on raw documents with a nasty value at ``key``: a grid or a UserError of bounded lines."""
    for value in NASTY:
        for base in (minimal_grid(), _ssh_base()):
            raw = (
                _at(base, key, value)
                if not key.startswith("spark_conf.")
                else {**base, "spark_conf": {key[11:]: value}}
            )
            try:
                grid_file.parse(raw, Path("g.yaml"))
            except UserError as error:
                assert all(len(problem) < 2000 for problem in error.problems), (key, shown(value))


@pytest.mark.parametrize("raw", [value for value in NASTY if not isinstance(value, dict)] + [{(1, 2): "a"}])
def test_a_document_that_is_not_a_grid_mapping_is_a_user_error(raw: Any) -> None:
    with pytest.raises(UserError):
        grid_file.parse(raw, Path("g.yaml"))


def test_nasty_lists_in_choice_lists_are_user_errors() -> None:
    for key in ("engines", "workload.mode", "sizing.cores_per_executor", "workload.epochs", "workload.fraction"):
        for value in ([[1], [1]], [{"a": 1}, {"a": 1}], [{1, 2}], [None, None]):
            assert f"g.yaml: {key}" in _problems(_at(minimal_grid(), key, value), Path("g.yaml"))


# --- axes: bounded before their values are checked, each distinct value checked once, no value twice ------------------

AXES = [
    pytest.param("workload.fraction", 0.5, id="fraction"),
    pytest.param("workload.epochs", 5, id="epochs"),
    pytest.param("workload.mode", "cv", id="mode"),
    pytest.param("workload.model.alpha", 0.1, id="model-alpha"),
    pytest.param("workload.model.activation", "tanh", id="model-activation"),
    pytest.param("workload.model.mllib_solver", "gd", id="model-mllib-solver"),
    pytest.param("workload.model.hidden_layer_sizes", [64], id="model-layers"),
    pytest.param("workload.param_grid.alpha", 0.1, id="param-grid-alpha"),
    pytest.param("workload.param_grid.hidden_layer_sizes", [64, 32], id="param-grid-layers"),
    pytest.param("sizing.cores_per_executor", 1, id="cores-per-executor"),
    pytest.param("engines", "dask", id="engines"),
]


def _axis_grid(key: str, values: list[Any]) -> dict[str, Any]:
    """A minimal grid with ``values`` as the axis at ``key`` (mode search for a param_grid axis)."""
    raw = minimal_grid()
    if key.startswith("workload.param_grid."):
        raw["workload"] = {**raw["workload"], "mode": "search"}
    return _at(raw, key, values)


@pytest.mark.parametrize(("key", "value"), AXES)
def test_a_value_listed_twice_on_any_axis_is_refused(key: str, value: Any) -> None:
    assert grid_file.parse(_axis_grid(key, [value]), Path("g.yaml"))  # once is fine
    err = _problems(_axis_grid(key, [value, copy.deepcopy(value)]))
    assert f"grid.yaml: {key}: lists a value twice: {shown(value)} at [0] and [1]; an axis lists each value once" in err


@pytest.mark.parametrize(("key", "value"), AXES)
def test_an_axis_over_the_limit_is_refused_before_any_of_its_values_is_checked(key: str, value: Any) -> None:
    refused = [0] if key.endswith("hidden_layer_sizes") else {"not": "a value"}  # ([0]: a list of lists is an axis)
    too_long = [refused] * (MAX_AXIS_VALUES + 1)  # each would be a problem of its own
    with pytest.raises(UserError) as caught:
        grid_file.parse(_axis_grid(key, too_long), Path("g.yaml"))
    assert caught.value.problems == [f"g.yaml: {key}: lists 1,001 values; an axis may list at most 1,000: shorten it"]


@pytest.mark.parametrize(
    ("key", "values", "again"),
    [
        pytest.param("workload.fraction", [1, 1.0], "1.0", id="int-and-float"),
        pytest.param("workload.param_grid.hidden_layer_sizes", [64, [64]], "[64]", id="width-and-layer-list"),
        pytest.param("workload.model.alpha", [0.001, 1e-3], "0.001", id="two-spellings"),
    ],
)
def test_one_value_written_two_ways_is_listed_twice(key: str, values: list[Any], again: str) -> None:
    assert f"{key}: lists a value twice: {again} at [0] and [1]" in _problems(_axis_grid(key, values))


def test_each_distinct_model_value_is_checked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long axis of repeats costs one scikit-learn check per distinct value, and is refused for its repeats."""
    from sklearn.neural_network import MLPClassifier

    checked: list[float] = []
    validate = MLPClassifier._validate_params

    def counting(self: Any) -> None:
        checked.append(self.alpha)
        validate(self)

    monkeypatch.setattr(MLPClassifier, "_validate_params", counting)
    err = _problems(_axis_grid("workload.model.alpha", [0.1, 0.2] * 500))
    assert "workload.model.alpha: lists a value twice: 0.1 at [0] and [2] (998 repeats in all)" in err
    assert sorted(alpha for alpha in checked if alpha != MLPClassifier().alpha) == [0.1, 0.2]


def test_unhashable_values_on_an_axis_are_refused_as_values() -> None:
    """Mappings, sets and nested lists cannot be compared: each is checked, and refused, never a TypeError."""
    values = [{"a": 1}, {"a": 1}, {1, 2}, {1, 2}, [[1]], [[1]]]
    for key in ("workload.fraction", "workload.epochs", "workload.model.alpha", "workload.param_grid.alpha", "engines"):
        err = _problems(_axis_grid(key, values))
        assert f"grid.yaml: {key}[0]: " in err and f"grid.yaml: {key}[2]: " in err, err


def test_axes_at_the_limit_plan(write_grid: Callable[..., Path]) -> None:
    alphas = [round(0.0001 * (i + 1), 6) for i in range(MAX_AXIS_VALUES)]
    grid = grid_file.load(write_grid(_axis_grid("workload.model.alpha", alphas)))
    assert dict(grid.workload.model_axes)["alpha"] == tuple(alphas)


# --- the baseline is not an engine of exclude/only rules --------------------------------------------------------------


@pytest.mark.parametrize("kind", ["exclude", "only"])
@pytest.mark.parametrize("engine", ["local", ["spark", "local"]], ids=["local", "in-a-list"])
def test_the_baseline_in_an_engine_rule_is_an_error_naming_baseline_false(
    kind: str, engine: Any, write_grid: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_grid({**minimal_grid(), kind: [{"engine": engine}]})
    assert main(["plan", str(path)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert (
        f"error: {path}: {kind}[0].engine: 'local' is the baseline, not an engine of exclude/only rules (they select "
        "among spark, dask, spark-mllib, ray); to measure without the baseline, use baseline: false"
    ) in err, err


def test_a_rule_engine_must_be_an_engine_but_need_not_be_in_the_grid() -> None:
    err = _problems({**minimal_grid(), "exclude": [{"engine": "sprak"}]})
    assert "exclude[0].engine: must be one of spark, dask, spark-mllib, ray, got 'sprak'; did you mean 'spark'?" in err
    grid = grid_file.parse({**minimal_grid(), "exclude": [{"engine": "spark-mllib"}]}, Path("g.yaml"))
    assert grid.exclude == ({"engine": "spark-mllib"},)  # matches nothing here: sweeper plan warns


# --- sizing.reserve.memory: 0 ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("memory", [0, "0"])
def test_no_reserved_memory_is_written_0(memory: Any) -> None:
    grid = grid_file.parse(_with("sizing", reserve={"cores": 0, "memory": memory}), Path("g.yaml"))
    assert grid.cluster.reserve_memory_mib == 0


@pytest.mark.parametrize("memory", [False, 0.0, "0.0", None])
def test_false_or_a_float_zero_is_not_a_reserved_memory(memory: Any) -> None:
    err = _problems(_with("sizing", reserve={"cores": 0, "memory": memory}))
    assert "sizing.reserve.memory: must be a size such as 64GiB" in err and f"got {memory!r}" in err, err


GRID_PROBLEMS = Path(__file__).parent / "fixtures" / "grid_problems.json"


def _outcome(raw: Any) -> dict[str, list[str]]:
    """The problems (a refused grid) or the warnings (a valid one) of ``raw`` as grid.yaml."""
    try:
        return {"problems": [], "warnings": list(grid_file.parse(raw, Path("grid.yaml")).warnings)}
    except UserError as error:
        return {"problems": error.problems, "warnings": []}


def test_the_problems_of_recorded_grids_are_unchanged_word_for_word() -> None:
    """Every grid of the golden fixture gives exactly its problems and warnings, in the same order.

    Rewrite the fixture only when a message changes on purpose: ``python tests/fixtures/make_grid_problems.py``.
    """
    cases = json.loads(GRID_PROBLEMS.read_text())
    assert len(cases) > 100
    for case in cases:
        expected = {"problems": case["problems"], "warnings": case["warnings"]}
        assert _outcome(yaml.safe_load(case["grid"])) == expected, (case["test"], case["grid"])


@pytest.mark.parametrize(
    "name",
    ["BASH_ENV", "LD_PRELOAD", "PYTHONSTARTUP", "JAVA_TOOL_OPTIONS", "PYSPARK_SUBMIT_ARGS", "PATH", "SPARK_HOME",
     "DASK_DISTRIBUTED__WORKER__PRELOAD", "GLIBC_TUNABLES", "_JAVA_OPTIONS", "HADOOP_OPTS", "ld_preload"],
)  # fmt: skip
def test_environment_refuses_variables_a_shell_loader_jvm_or_launcher_reads(name: str) -> None:
    err = _problems({**minimal_grid(), "environment": {name: "/tmp/x.sh"}})
    assert f"environment.{name}: {name} is read by " in err and "not only by the fits" in err


def test_environment_keeps_what_the_fits_read() -> None:
    environment = {"PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1", "MALLOC_TRIM_THRESHOLD_": "0", "MY_SWITCH": "on"}
    grid = grid_file.parse({**minimal_grid(), "environment": environment}, Path("g.yaml"))
    assert dict(grid.environment) == environment


@pytest.mark.parametrize(
    ("change", "unknown"),
    [
        ({"sizing": {"cores_per_exector": [1]}}, "sizing.cores_per_exector"),
        ({"sizng": {"cores_per_executor": [1]}}, "sizng"),
    ],
)  # fmt: skip
def test_a_typo_is_named_alone_without_an_error_about_a_default_never_written(
    change: dict[str, Any], unknown: str
) -> None:
    grid = {key: value for key, value in minimal_grid().items() if key != "sizing"} | change
    grid["cluster"] = {**grid["cluster"], "cores_per_node": 2}
    problems = _problems(grid).splitlines()
    assert len(problems) == 1 and f"{unknown}: unknown key" in problems[0], problems


def test_a_default_that_does_not_fit_the_nodes_says_it_is_the_default() -> None:
    grid = {key: value for key, value in minimal_grid().items() if key != "sizing"}
    err = _problems(grid)
    assert "sizing.cores_per_executor: is not set, and its default 5 is more than the 2 cores of a node" in err


def test_standalone_needs_the_address_of_each_listed_engines_cluster_and_only_those() -> None:
    """Manager standalone: spark_master for spark (and spark-mllib), dask_scheduler for dask, ray_address (HOST:PORT,
    no scheme) for ray; an engine the grid does not list needs no address."""
    cluster = {"manager": "standalone", "nodes": 1, "cores_per_node": 2, "memory_per_node": "8GiB"}
    err = _problems(minimal_grid(cluster=cluster, engines=["spark", "dask", "ray"]))
    assert "cluster.spark_master: is required with manager: standalone and engine spark: spark://HOST:PORT" in err
    assert "cluster.dask_scheduler: is required with manager: standalone and engine dask: tcp://HOST:PORT" in err
    assert "cluster.ray_address: is required with manager: standalone and engine ray: HOST:PORT, got" in err
    for wrong in ("ray://head:6379", "head", "head:port"):
        err = _problems(minimal_grid(cluster={**cluster, "ray_address": wrong}, engines=["ray"]))
        assert (
            f"cluster.ray_address: is required with manager: standalone and engine ray: HOST:PORT, got {wrong!r}" in err
        )
    grid = grid_file.parse(
        minimal_grid(cluster={**cluster, "ray_address": "head:6379"}, engines=["ray"]), Path("g.yaml")
    )
    assert dict(grid.cluster_keys) == {"ray_address": "head:6379"}
    assert options_for(grid) == StandaloneOptions(ray_address="head:6379")
    both = {**cluster, "spark_master": "spark://m:7077", "dask_scheduler": "tcp://s:8786"}
    assert grid_file.parse(minimal_grid(cluster=both), Path("g.yaml")).cluster_key("spark_master") == "spark://m:7077"

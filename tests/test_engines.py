"""The engine registry and the checks every launch makes, without starting clusters."""

from __future__ import annotations

import ast
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from sweeper import names
from sweeper.cli import main
from sweeper.errors import UserError
from sweeper.launch import registry
from sweeper.launch.base import Granted, LaunchError, check_granted
from sweeper.launch.dask import ssh as dask_ssh
from sweeper.launch.hosts import ssh as ssh_hosts
from sweeper.launch.options import SshCluster, SshOptions
from sweeper.launch.spark import ssh as spark_ssh
from sweeper.launch.spark.conf import with_spark_conf
from sweeper.run import measure
from tests.conftest import minimal_grid


def test_unknown_engine_lists_the_valid_ones() -> None:
    with pytest.raises(
        UserError, match=r"Invalid engine: 'flink', expected one of \['dask', 'local', 'ray', 'spark', 'spark-mllib'\]"
    ):
        registry.starter("flink")


def test_a_missing_engine_package_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # Stand-in for an engine whose package is not installed: the registry points at a module that does not exist.
    missing = ("sweeper.launch.not_installed:LocalDask", "dask[distributed]")
    monkeypatch.setitem(registry.LAUNCHERS, ("dask", "local"), missing)
    with pytest.raises(UserError, match=r"needs dask\[distributed\].*pip install dask\[distributed\]"):
        registry.starter("dask")


def test_planning_imports_no_engine_and_a_starter_imports_only_its_own() -> None:
    # in a subprocess: this test process has imported everything
    code = (
        "import sys; from sweeper.cli import main; from sweeper.launch import registry\n"
        "assert main(['plan', 'grids/local.yaml']) == 0\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('pyspark', 'distributed', 'joblibspark')"
        " or m.startswith(('sweeper.launch.spark', 'sweeper.launch.dask'))]\n"
        "assert not heavy, heavy\n"
        "registry.starter('dask', 'local')\n"
        "assert 'sweeper.launch.dask.local' in sys.modules and 'sweeper.launch.spark.local' not in sys.modules\n"
    )
    repo = Path(registry.__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", code], cwd=repo, check=True, timeout=120)


def test_the_registry_names_every_engine_and_manager_a_grid_uses() -> None:
    assert {engine for engine, _ in registry.LAUNCHERS} == {*names.ENGINES, names.BASELINE_ENGINE}
    assert {manager for _, manager in registry.LAUNCHERS} == set(names.MANAGERS)
    assert set(names.DEFAULT_ENGINES) | set(names.ONE_MODEL_ENGINES) <= set(names.ENGINES)


def test_a_grant_other_than_the_plan_fails_the_launch() -> None:
    planned = Granted(executors=7, cores_per_executor=5, executor_memory_mib=13 * 1024)
    check_granted(planned, Granted(7, 5, 13 * 1024), "spark")
    with pytest.raises(LaunchError, match=r"spark granted 6 executors x 5 cores x 13 GiB, planned 7 executors"):
        check_granted(planned, Granted(6, 5, 13 * 1024), "spark")


def test_run_on_a_manager_an_engine_cannot_use_stops_before_anything_starts(
    write_grid: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Stand-in for an engine without YARN support: its registry entry is removed for this test.
    monkeypatch.delitem(registry.LAUNCHERS, ("dask", "yarn"))
    grid = minimal_grid(store=str(tmp_path / "store"))
    grid["cluster"] = {**grid["cluster"], "manager": "yarn"}
    assert main(["run", str(write_grid(grid))]) == 2
    assert "engine 'dask' cannot launch on manager 'yarn' yet" in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "store").exists()


def test_a_missing_engine_package_stops_the_run_with_exit_2_and_no_row(
    write_grid: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Stand-in for Dask not installed: the registry points at a module that does not exist (as in the test above).
    monkeypatch.setitem(registry.LAUNCHERS, ("dask", "local"), ("sweeper.launch.not_installed:LocalDask", "dask"))
    grid = minimal_grid(store=str(tmp_path / "store"), engines=["dask"])
    assert main(["run", str(write_grid(grid)), "--skip-check"]) == 2
    assert "engine 'dask' on 'local' needs dask" in " ".join(capsys.readouterr().err.split())
    assert not list((tmp_path / "store").rglob("*.parquet"))  # no failed rows: nothing was launched


# --- every ssh command line: the destination after "--" -------------------------------------------------------

HOSTILE_HOST = "-oProxyCommand=touch /tmp/sweeper-hostile-host"
HOSTILE_USER = "-oProxyCommand=touch /tmp/sweeper-hostile-user"


class RecordedSsh:
    """Stands in for ``subprocess.run`` in ssh_hosts: records each ``ssh`` argv, answers like a healthy host."""

    def __init__(self) -> None:
        self.argvs: list[list[str]] = []

    def __call__(self, argv: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        self.argvs.append(argv)
        remote = argv[-1]
        if "-version" in remote:
            out = 'openjdk version "17.0.2" 2022-01-18\n'
        elif "import sys" in remote:
            out = f"{sys.version_info[0]}.{sys.version_info[1]}\n/opt/pyspark\n"
        elif "echo $!" in remote:
            out = "4242\n"
        else:
            out = ""
        return subprocess.CompletedProcess(argv, 0, stdout=out, stderr="")


def every_remote_call(cluster: SshCluster) -> None:
    """Every function of the SSH engines that runs something on a host, once."""
    host, options = cluster.hosts[0], cluster.options
    ssh_hosts.run_remote(host, ["echo", "a b"], options)
    ssh_hosts.check_host(host, options, cluster.python, cluster.java)
    ssh_hosts.kill_groups(host, options, [12], grace_s=0.0)
    ssh_hosts.groups_alive(host, options, [12])
    daemons = spark_ssh.Daemons(cluster, "token", f"{cluster.remote_dir}/sweeper-spark-0-token", {host: [12]})
    spark_ssh._make_scratch(daemons, host)
    spark_ssh._start_daemon(daemons, host, "/opt/pyspark", "secret", "master", spark_ssh.MASTER_CLASS)
    spark_ssh._log_tail(daemons, host, "master")
    spark_ssh.remote_executors(cluster, "app-1")
    spark = SimpleNamespace(sparkContext=SimpleNamespace(applicationId="app-1", cancelAllJobs=lambda: None))
    spark_ssh.SshSparkSession(spark, Granted(1, 1, 1), 1, cluster).abort()
    spark_ssh.stop_daemons(daemons, grace_s=0.0)
    groups = dask_ssh.RemoteGroups(cluster, "token")
    groups.scan()
    groups.kill_workers(host)
    groups.wait_gone(linger_s=0.0)
    dask_ssh.install_tls(cluster, host, f"{cluster.remote_dir}/tls", "key", "cert")
    dask_ssh._make_scratch(cluster, host, cluster.remote_dir)
    dask_ssh._remove_scratch(cluster, host, cluster.remote_dir)


def test_every_ssh_command_line_has_the_host_after_double_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    recorded = RecordedSsh()
    monkeypatch.setattr(ssh_hosts.subprocess, "run", recorded)
    # daemons bind the address the driver resolves: a hostile name resolves nowhere, so it stands in for one here
    monkeypatch.setattr(spark_ssh, "resolve", lambda host: "192.0.2.10")
    options = SshOptions(user=HOSTILE_USER, port=2222, identity_file="/k", known_hosts="/kh")
    cluster = SshCluster(hosts=(HOSTILE_HOST,), options=options, java_home="/jdk", remote_dir="/scratch")
    every_remote_call(cluster)
    assert len(recorded.argvs) >= 15
    for argv in recorded.argvs:
        # ssh, its options, then "--", the destination and the remote command: nothing else is parsed as an option
        assert argv[0] == "ssh" and argv[-3:-1] == ["--", HOSTILE_HOST], argv
        options_part = argv[1:-3]
        assert HOSTILE_HOST not in options_part and "--" not in options_part, argv
        assert options_part[options_part.index("-l") + 1] == HOSTILE_USER, argv  # the argument of -l, not an option


def test_only_ssh_command_builds_an_ssh_command_line() -> None:
    """The package's one ``ssh`` argv is built by ssh_hosts.ssh_command; nothing else runs ssh, scp or rsync."""
    package = Path(registry.__file__).resolve().parent.parent
    found = [
        f"{path.relative_to(package)}:{node.lineno}"
        for path in package.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.List)  # an argv: [program, ...]
        and node.elts
        and isinstance(node.elts[0], ast.Constant)
        and node.elts[0].value in ("ssh", "scp", "rsync", "sftp")
    ]
    assert len(found) == 1 and found[0].startswith("launch/hosts/ssh.py:"), found


# --- a batch at its time limit: the deadline alone decides -----------------------------------------------------


class Clock:
    """``time`` for the runner, with a monotonic clock that moves only when a test batch says so."""

    def __init__(self) -> None:
        self.now_s = 0.0
        self.perf_counter = time.perf_counter

    def monotonic(self) -> float:
        return self.now_s


class Batch:
    """A session whose batch runs ``run_s`` on the clock and then ends with ``ending`` (results or an error).

    ``until_abort``: the batch does not end by itself; ``abort()`` ends it (and raises ``abort_error``, if set).
    """

    def __init__(self, clock: Clock, run_s: float, ending: Any, *, until_abort: bool = False) -> None:
        self.granted = Granted(1, 1, 1)
        self.clock, self.run_s, self.ending = clock, run_s, ending
        self.aborted = threading.Event()
        self.until_abort = until_abort
        self.abort_error: Exception | None = None

    def run_batch(self, tasks: list[Any], data: Any) -> list[Any]:
        self.clock.now_s += self.run_s
        if self.until_abort:
            self.aborted.wait(60)
        if isinstance(self.ending, BaseException):
            raise self.ending
        return list(self.ending)

    def abort(self, restart: bool = True) -> None:
        self.aborted.set()
        if self.abort_error is not None:
            raise self.abort_error


# what an aborted Dask batch raised when joblib ran it in the driver on a cluster half restarted
ABORTED = AttributeError("'Future' object has no attribute 'resolve'")


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(measure, "time", fake)
    return fake


def test_a_batch_that_ends_with_an_error_after_its_deadline_is_a_timeout(clock: Clock) -> None:
    # The race: the aborted batch's own error arrived between the deadline and the runner's look at the batch.
    batch = Batch(clock, run_s=10.0, ending=ABORTED)
    with pytest.raises(measure.MeasurementTimeout):
        measure.with_timeout(batch, [], None, timeout_s=5.0)  # type: ignore[arg-type]
    assert not batch.aborted.is_set()  # it had ended: nothing to abort


def test_a_batch_that_returns_after_its_deadline_is_a_timeout(clock: Clock) -> None:
    with pytest.raises(measure.MeasurementTimeout):
        measure.with_timeout(Batch(clock, run_s=5.5, ending=["late"]), [], None, timeout_s=5.0)  # type: ignore[arg-type]


def test_a_batch_running_at_its_deadline_is_aborted_and_is_a_timeout_whatever_it_raises(clock: Clock) -> None:
    batch = Batch(clock, run_s=10.0, ending=ABORTED, until_abort=True)
    with pytest.raises(measure.MeasurementTimeout):
        measure.with_timeout(batch, [], None, timeout_s=5.0)  # type: ignore[arg-type]
    assert batch.aborted.is_set()


def test_an_abort_that_fails_still_makes_a_timeout_naming_why(clock: Clock) -> None:
    batch = Batch(clock, run_s=10.0, ending=ABORTED, until_abort=True)
    batch.abort_error = LaunchError("dask: the workers did not start again")
    with pytest.raises(measure.MeasurementTimeout) as raised:
        measure.with_timeout(batch, [], None, timeout_s=5.0)  # type: ignore[arg-type]
    assert raised.value.__cause__ is batch.abort_error


def test_a_batch_that_ends_in_time_gives_its_results_or_its_own_error(clock: Clock) -> None:
    assert measure.with_timeout(Batch(clock, 5.0, ["ok"]), [], None, timeout_s=5.0) == ["ok"]  # type: ignore[arg-type]
    failing = ValueError("a fit raised")
    with pytest.raises(ValueError, match="a fit raised"):
        measure.with_timeout(Batch(clock, 1.0, failing), [], None, timeout_s=5.0)  # type: ignore[arg-type]


# --- spark_conf merged with the sweeper's Spark properties ------------------------------------------------------


def test_local_spark_jvms_start_without_the_optimizing_compiler_unless_they_train_or_the_grid_says(
    tmp_path: Path,
) -> None:
    """#38: the spark engine's local JVMs only move tasks and results: C1 alone (a default a grid's -XX option
    overrides: it comes later on the command line); spark-mllib's executors train in the JVM and keep C2."""
    from sweeper.launch.spark.conf import QUICK_START_JAVA_OPTIONS, local_conf
    from tests.support.launches import context, launch

    log4j = tmp_path / "log4j2.properties"
    spark = local_conf(launch("spark"), context(tmp_path), log4j)
    mllib = local_conf(launch("spark-mllib"), context(tmp_path), log4j)
    quiet = f"-Dlog4j2.configurationFile=file:{log4j}"
    assert spark["spark.executor.extraJavaOptions"] == spark["spark.driver.extraJavaOptions"]
    assert spark["spark.executor.extraJavaOptions"] == f"{QUICK_START_JAVA_OPTIONS} {quiet}"
    assert mllib["spark.executor.extraJavaOptions"] == quiet
    assert mllib["spark.driver.extraJavaOptions"] == f"{QUICK_START_JAVA_OPTIONS} {quiet}"
    merged = with_spark_conf(spark, {"spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=4 -Dmine=1"})
    assert (
        merged["spark.executor.extraJavaOptions"]
        == f"{QUICK_START_JAVA_OPTIONS} -XX:TieredStopAtLevel=4 -Dmine=1 {quiet}"
    )


def test_an_existing_standalone_masters_application_starts_its_jvms_without_the_optimizing_compiler(
    tmp_path: Path,
) -> None:
    """The driver and the executors of an application on the user's master (their daemons are the user's)."""
    from sweeper.launch.options import StandaloneOptions
    from sweeper.launch.spark.conf import QUICK_START_JAVA_OPTIONS
    from sweeper.launch.spark.standalone import StandaloneSpark
    from tests.support.launches import context, launch

    def conf(engine: str) -> dict[str, str]:
        options = StandaloneOptions(spark_master="spark://127.0.0.1:7077")
        backend = StandaloneSpark(launch(engine, "standalone"), context(tmp_path, options), tmp_path)
        backend.check()  # reads the master from the grid
        return backend.conf()

    spark, mllib = conf("spark"), conf("spark-mllib")
    assert spark["spark.driver.extraJavaOptions"] == QUICK_START_JAVA_OPTIONS
    assert spark["spark.executor.extraJavaOptions"] == QUICK_START_JAVA_OPTIONS
    assert mllib["spark.driver.extraJavaOptions"] == QUICK_START_JAVA_OPTIONS
    assert "spark.executor.extraJavaOptions" not in mllib  # spark-mllib's executors train in the JVM


def test_spark_conf_extends_java_options_and_lists_and_never_replaces_the_fit_environment() -> None:
    ours = {
        "spark.executor.extraJavaOptions": "-Dsweeper.launch=abc",
        "spark.driver.extraJavaOptions": "-Dlog4j2.configurationFile=file:/q",
        "spark.yarn.am.extraJavaOptions": "-Dlog4j2.configurationFile=file:/q",
        "spark.yarn.dist.archives": "/env.tar.gz#environment",
        "spark.yarn.dist.files": "/q,hdfs:///e.jsa#classes.jsa",
        "spark.executorEnv.OMP_NUM_THREADS": "1",
        "spark.executorEnv.PYTHONHASHSEED": "6640",
        "spark.yarn.appMasterEnv.PYSPARK_PYTHON": "./environment/bin/python",
        "spark.app.name": "sweeper-launch-0",
    }
    grid = {
        "spark.executor.extraJavaOptions": "-XX:+UseG1GC -Dsweeper.launch=forged",
        "spark.driver.extraJavaOptions": "-Dmine=1",
        "spark.yarn.am.extraJavaOptions": "",
        "spark.yarn.dist.archives": "/extra.zip#extra",
        "spark.yarn.dist.files": "/mine.txt",
        "spark.executorEnv.OMP_NUM_THREADS": "8",
        "spark.executorEnv.MY_VARIABLE": "kept",
        "spark.yarn.appMasterEnv.PYSPARK_PYTHON": "/usr/bin/python3",
        "spark.app.name": "mine",
        "spark.sql.shuffle.partitions": "4",
    }
    merged = with_spark_conf(ours, grid)
    # the grid's Java options first, the sweeper's last: a JVM takes the last of a repeated -D
    assert merged["spark.executor.extraJavaOptions"] == "-XX:+UseG1GC -Dsweeper.launch=forged -Dsweeper.launch=abc"
    assert merged["spark.driver.extraJavaOptions"] == "-Dmine=1 -Dlog4j2.configurationFile=file:/q"
    assert merged["spark.yarn.am.extraJavaOptions"] == "-Dlog4j2.configurationFile=file:/q"
    assert merged["spark.yarn.dist.archives"] == "/env.tar.gz#environment,/extra.zip#extra"
    assert merged["spark.yarn.dist.files"] == "/q,hdfs:///e.jsa#classes.jsa,/mine.txt"  # the log settings kept too
    assert merged["spark.executorEnv.OMP_NUM_THREADS"] == "1"  # pinned: set it with `environment`, on every engine
    assert merged["spark.executorEnv.PYTHONHASHSEED"] == "6640"
    assert merged["spark.yarn.appMasterEnv.PYSPARK_PYTHON"] == "./environment/bin/python"
    assert merged["spark.executorEnv.MY_VARIABLE"] == "kept"
    assert merged["spark.app.name"] == "mine"  # anything else: the grid's value
    assert merged["spark.sql.shuffle.partitions"] == "4"
    assert with_spark_conf(ours, {}) == ours

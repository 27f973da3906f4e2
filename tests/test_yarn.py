"""manager yarn against a real YARN: Hadoop's MiniYARNCluster (deploy/yarn), 2 NodeManagers on loopback.

Spark runs in client mode (driver here, AM and executors in YARN containers); Dask runs its
scheduler here and its workers in the containers of one application (sweeper.yarn.Containers). NodeManagers
are local, so containers are checked in the local process table. The cluster is the session's ``yarn``
(tests/conftest.py); the engine contract on it (granted, fits, containers, nothing left) is in
tests/test_engine_contract.py.
"""

from __future__ import annotations

import functools
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml

from sweeper import load_results
from sweeper.launch.base import LaunchContext, LaunchError
from sweeper.launch.options import YarnOptions, options_for
from sweeper.launch.registry import starter
from sweeper.launch.spark import yarn as spark_yarn
from tests.conftest import REPO, minimal_grid
from tests.support import launches
from tests.support.faults import wait_until_fitting
from tests.support.figures import assert_resource_figures
from tests.support.hadoop_sites import site
from tests.support.leftovers import SPARK_PYTHON_DAEMONS
from tests.support.yarn_cluster import YarnCluster, applications, assert_no_containers, live_applications, rest

# what runs a fit in a container: a Spark executor's Python daemon and its workers, forked from it; a Dask worker
FIT_PROCESS_MARKERS = (*SPARK_PYTHON_DAEMONS, "dask_worker")

pytestmark = [pytest.mark.integration, pytest.mark.yarn]


@pytest.fixture
def on_yarn(yarn: YarnCluster, monkeypatch: pytest.MonkeyPatch) -> YarnCluster:
    for key, value in yarn.environment.items():
        monkeypatch.setenv(key, value)
    return yarn


# launches.launch(engine, "yarn"): one node of 2 cores as the plan sees it, 2 executors of 1 core and 512 MiB;
# YARN may put both executors on one NodeManager or one on each


def context(tmp_path: Path, options: YarnOptions | None = None) -> LaunchContext:
    return launches.context(tmp_path / "run", options or YarnOptions(), start_timeout_s=120)


def test_the_cluster_has_two_node_managers_of_the_asked_size(yarn: YarnCluster) -> None:
    nodes = rest(yarn, "/nodes")["nodes"]["node"]
    assert len(nodes) == 2
    assert {n["state"] for n in nodes} == {"RUNNING"}
    assert {
        (n["usedMemoryMB"] + n["availMemoryMB"], n["usedVirtualCores"] + n["availableVirtualCores"]) for n in nodes
    } == {(4096, 2)}
    assert (yarn.conf_dir / "yarn-site.xml").is_file() and (yarn.conf_dir / "core-site.xml").is_file()


def test_executors_bigger_than_any_node_manager_fail_at_once(on_yarn: YarnCluster, tmp_path: Path) -> None:
    started = time.monotonic()
    too_big = launches.launch("spark", "yarn", executor_memory_mib=5 * 1024)
    with (
        pytest.raises(LaunchError, match=r"above the max threshold \(4096 MB\) of this cluster"),
        starter("spark", "yarn")(too_big, context(tmp_path)),
    ):
        pass
    assert time.monotonic() - started < 60
    assert_no_containers()


def test_an_unknown_queue_fails_at_once(on_yarn: YarnCluster, tmp_path: Path) -> None:
    with (
        pytest.raises(LaunchError, match=r"unknown queue: nosuch"),
        starter("spark", "yarn")(launches.launch("spark", "yarn"), context(tmp_path, YarnOptions(queue="nosuch"))),
    ):
        pass
    assert_no_containers()


def executors_that_cannot_start(tmp_path: Path, application_master: str) -> LaunchContext:
    """A launch whose every executor JVM exits at once (a Java agent that is not there); ``application_master``:
    ``spark.yarn.unmanagedAM.enabled`` ("true": run by the driver, "false": in a container of its own)."""
    refused = {
        "spark.executor.extraJavaOptions": f"-javaagent:{tmp_path / 'no-such-agent.jar'}",
        "spark.yarn.unmanagedAM.enabled": application_master,
    }
    return launches.context(tmp_path / "run", YarnOptions(), start_timeout_s=600, spark_conf=refused)


@pytest.mark.parametrize(
    ("application_master", "why"),
    [
        ("true", r"its ApplicationMaster, run by the driver, gave up: its executors kept failing to start"),
        ("false", r"FAILED: .*executor failures"),  # in a container of its own: YARN ends the application
    ],
    ids=["in-the-driver", "in-a-container"],
)
def test_executors_that_cannot_start_end_the_launch_when_their_application_master_gives_up(
    application_master: str, why: str, on_yarn: YarnCluster, tmp_path: Path
) -> None:
    """Every executor JVM exits at once (a Java agent that is not there): Spark's ApplicationMaster gives up after
    its executor failures, and the launch fails then with its reason, not at its start limit with a guess; the
    sweeper's default runs the ApplicationMaster in the driver, a grid may put it in a container. (An unknown
    ``-XX:`` option would not do: Spark's JVMs ignore those.)"""
    launch_context = executors_that_cannot_start(tmp_path, application_master)
    with (
        pytest.raises(LaunchError, match=rf"ended with 0 of 2 executors registered \({why}") as ended,
        starter("spark", "yarn")(launches.launch("spark", "yarn"), launch_context),
    ):
        pytest.fail("executors that cannot start started")
    assert "within 600 s" not in str(ended.value)
    assert_no_containers()
    assert not live_applications(on_yarn)


def test_an_application_yarn_ends_while_its_session_is_made_fails_the_launch_with_yarns_reason(
    on_yarn: YarnCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The test above on a busy machine: YARN ended the application (its ApplicationMaster, in a container, gave up
    on executors that cannot start) before the session was made, whose next call met a stopped SparkContext. Made
    certain here: the session is used only once its context has stopped. The launch names YARN's reason."""
    made = spark_yarn.new_session

    def used_after_the_end(conf: dict[str, str], launch_context: LaunchContext) -> Any:
        spark = made(conf, launch_context)
        deadline = time.monotonic() + 300
        while not spark.sparkContext._jsc.sc().isStopped():
            assert time.monotonic() < deadline, "YARN did not end the application"
            time.sleep(0.5)
        spark.sparkContext.parallelize([1]).count()  # pyspark: "Cannot call methods on a stopped SparkContext"
        return spark

    monkeypatch.setattr(spark_yarn, "new_session", used_after_the_end)
    launch_context = executors_that_cannot_start(tmp_path, application_master="false")
    with (
        pytest.raises(LaunchError, match=r"application \S+ ended with 0 of 2 executors registered \(FAILED: "),
        starter("spark", "yarn")(launches.launch("spark", "yarn"), launch_context),
    ):
        pytest.fail("executors that cannot start started")
    assert_no_containers()
    assert not live_applications(on_yarn)


@pytest.mark.parametrize("engine", ["spark", "dask"])
def test_executors_yarn_crowds_onto_one_node_fail_the_launch_named_by_node_manager(
    engine: str, on_yarn: YarnCluster, tmp_path: Path
) -> None:
    """#20 defect 10: the plan gives each of 3 nodes one executor; the cluster has 2 NodeManagers with room for
    several (YARN counts memory alone here), so one of them gets at least 2: the launch must not measure that."""
    crowded = launches.launch(engine, "yarn", nodes=3, executors=3)
    start = starter(engine, "yarn")
    refused = r"YARN placed executors .*; the plan allows at most 1 per node"
    with pytest.raises(LaunchError, match=refused) as failed, start(crowded, context(tmp_path)):
        pytest.fail("a crowded launch started")
    nodes = rest(on_yarn, "/nodes")["nodes"]["node"]
    node_managers = {f"{n['nodeHostName']}:{n['id'].rsplit(':', 1)[1]}" for n in nodes}
    named = set(re.findall(r"(\S+:\d+): \d", str(failed.value)))
    assert named and named <= node_managers, (named, node_managers)  # each executor's own NodeManager
    assert_no_containers()
    assert not live_applications(on_yarn)


# --- cluster.python_archive: the environment shipped to the containers ---------------------------------------


def test_pack_env_ships_a_real_copy_of_sweeper_and_leaves_out_what_no_container_needs(packed_env: Path) -> None:
    import tarfile

    with tarfile.open(packed_env) as archive:
        names = set(archive.getnames())
    site = f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"
    assert "pyvenv.cfg" not in names  # its own interpreter (lib/pythonX.Y/os.py), not a venv of this machine's
    assert {
        f"lib/python{sys.version_info.major}.{sys.version_info.minor}/os.py",
        "bin/python",
        f"{site}/sweeper/workload/fit.py",
        f"{site}/sweeper/launch/dask/yarn.py",
    } <= names
    assert f"{site}/pyspark/worker.py" in names and f"{site}/distributed/cli/dask_worker.py" in names
    assert not any(n.startswith(f"{site}/pyspark/jars/") or "__editable__" in n for n in names)
    assert not any(n.startswith(f"{site}/pyarrow") for n in names)
    # compiled: what a node's processes import, each beside its source; not the rest (pyspark's SQL connect client)
    tag = sys.implementation.cache_tag
    compiled = [n for n in names if n.endswith(".pyc")]
    assert f"{site}/sweeper/workload/__pycache__/fit.{tag}.pyc" in compiled
    assert f"{site}/sklearn/ensemble/__pycache__/_forest.{tag}.pyc" in compiled  # a grid may name any estimator
    assert all(n.replace("/__pycache__/", "/").removesuffix(f".{tag}.pyc") + ".py" in names for n in compiled)
    assert not any(n.startswith(f"{site}/pyspark/sql/connect/") and n.endswith(".pyc") for n in names)


# That the fits run in the unpacked archive (an interpreter and extension modules from a NodeManager's cache, none of
# this venv) is asserted where it is the only way to run them: on the namespaced cluster, whose nodes see none of the
# edge's Pythons, for both engines (tests/test_ns_sweep.py). The mini cluster's Dask launch with the archive was that
# test's double (54 s).


# --- the command line on the mini cluster ---------------------------------------------------------------------


def yarn_grid(tmp: Path, cluster: YarnCluster, name: str, **workload: Any) -> Path:
    """A grid for the mini cluster: 1 node x 2 usable cores -> 2 executors x 1 core x 1 GiB (+ 1 GiB overhead).

    One node as the plan sees it, of a NodeManager's size (2 vcores, 4 GiB): wherever YARN places the two
    executors, no NodeManager holds more than the plan gives a node.
    """
    grid = minimal_grid(
        name=name,
        store=str(tmp / "store"),
        cluster={"manager": "yarn", "nodes": 1, "cores_per_node": 3, "memory_per_node": "5GiB",
                 "hadoop_conf_dir": str(cluster.conf_dir)},
        sizing={"cores_per_executor": [1], "reserve": {"cores": 1, "memory": "1GiB"}, "application_master": 0},
        baseline=False,
    )  # fmt: skip
    grid["workload"] = {"dataset": "digits", "model": {"hidden_layer_sizes": [16]}, "trials": 1, **workload}
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(grid, sort_keys=False))
    return path


def test_the_grid_hands_the_python_archive_to_the_yarn_engines(
    yarn: YarnCluster, packed_env: Path, tmp_path: Path
) -> None:
    from sweeper.config import load as grid_file

    spec = yaml.safe_load(yarn_grid(tmp_path, yarn, "handed", epochs=[3]).read_text())
    spec["cluster"]["python_archive"] = str(packed_env)
    spec["cluster"]["queue"] = "default"
    (tmp_path / "handed.yaml").write_text(yaml.safe_dump(spec))
    assert options_for(grid_file.load(tmp_path / "handed.yaml")) == YarnOptions(yarn.conf_dir, "default", packed_env)


def test_a_sweep_through_the_command_line_runs_on_yarn(yarn: YarnCluster, tmp_path: Path) -> None:
    grid = yarn_grid(tmp_path, yarn, "yarn-cli", epochs=[20])
    environment = {k: v for k, v in os.environ.items() if k not in ("HADOOP_CONF_DIR", "YARN_CONF_DIR")}
    result = subprocess.run(
        [sys.executable, "-m", "sweeper", "run", str(grid)],
        cwd=REPO, env=environment, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    frame = load_results(tmp_path / "store")
    assert sorted(frame["engine"]) == ["dask", "spark"]
    assert set(frame["status"]) == {"ok"}, frame[["engine", "error"]].to_dict("records")
    assert set(frame["manager"]) == {"yarn"}
    assert (frame["granted_executors"] == 2).all() and (frame["granted_cores_per_executor"] == 1).all()
    assert (frame["granted_executor_memory_gib"] == frame["executor_memory_gib"]).all()
    assert (frame["worker_pids"] == 2).all() and (frame["accuracy"] > 0.5).all()
    assert_resource_figures(frame)  # measured in the containers, on the NodeManagers' side
    assert_no_containers()
    assert not live_applications(yarn)


def fit_processes(application: str) -> list[psutil.Process]:
    """Python processes in ``application``'s YARN containers that run fits: Spark's Python workers, Dask workers
    (not another test's, nor another run's, on the machine)."""
    found = []
    for process in psutil.process_iter(["cmdline", "cwd"]):
        try:
            cmdline = " ".join(process.info["cmdline"] or [])
            in_container = f"/appcache/{application}/" in (process.info["cwd"] or "")
            if in_container and any(marker in cmdline for marker in FIT_PROCESS_MARKERS):
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


@pytest.mark.parametrize("engine", ["spark", "dask"])
def test_ctrl_c_during_a_yarn_launch_kills_the_application_and_keeps_the_rows(
    engine: str, yarn: YarnCluster, tmp_path: Path
) -> None:
    grid = yarn_grid(tmp_path, yarn, f"yarn-ctrl-c-{engine}", epochs=[3, 5000], exact_epochs=True)
    spec = yaml.safe_load(grid.read_text())
    spec["engines"] = [engine]
    grid.write_text(yaml.safe_dump(spec, sort_keys=False))
    known = {app["id"] for app in applications(yarn)}
    process = subprocess.Popen(  # the preflight's probe application is the CLI sweep's test (~7 s each here)
        [sys.executable, "-m", "sweeper", "run", str(grid), "--skip-check"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    sweep_dir = tmp_path / "store" / f"yarn-ctrl-c-{engine}"
    try:
        deadline = time.monotonic() + 180
        # the first measurement's row is written: the launch is up and the next batch of fits is running
        while not (sweep_dir.exists() and any(p.name.startswith("part-") for p in sweep_dir.iterdir())):
            assert time.monotonic() < deadline and process.poll() is None, "the YARN launch never wrote a row"
            time.sleep(0.2)
        ours = [a for a in applications(yarn) if a["id"] not in known]  # the launch's application
        assert [a["state"] for a in ours] == ["RUNNING"]
        fitting = functools.partial(fit_processes, ours[0]["id"])
        wait_until_fitting(fitting, cpu_s=1.0, include_self=True, timeout_s=120, alive=process)  # 5000 epochs
        os.kill(process.pid, signal.SIGINT)
        interrupted = time.monotonic()
        output, _ = process.communicate(timeout=120)
        stopped_s = time.monotonic() - interrupted
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=30)
    assert process.returncode == 130, output
    assert stopped_s < 20, f"the sweep took {stopped_s:.0f} s to stop"  # the batch is aborted, not waited for
    kept = load_results(tmp_path / "store")
    assert list(kept["epochs"]) == [3] and set(kept["status"]) == {"ok"}
    app = next(a for a in applications(yarn) if a["id"] == ours[0]["id"])
    assert app["state"] in ("KILLED", "FINISHED"), app["state"]
    assert not live_applications(yarn)
    assert_no_containers()


@pytest.mark.parametrize("default_fs", ["file:///", "hdfs://namenode:8020"])
def test_where_spark_takes_its_jars_and_stages_with_a_python_archive(
    default_fs: str, packed_env: Path, tmp_path: Path
) -> None:
    conf_dir = site(tmp_path / "conf", "yarn-site.xml", {"yarn.resourcemanager.hostname": "127.0.0.1"})
    site(conf_dir, "core-site.xml", {"fs.defaultFS": default_fs})
    options = YarnOptions(conf_dir=conf_dir, python_archive=packed_env)
    backend = spark_yarn.YarnSpark(launches.launch("spark", "yarn"), context(tmp_path, options), tmp_path / "spark-0")
    backend.check()
    conf = backend.conf()
    assert conf["spark.yarn.dist.archives"] == f"{packed_env}#environment"
    assert conf["spark.executorEnv.PYSPARK_PYTHON"] == "./environment/bin/python"
    one_machine = default_fs.startswith("file:")
    # a cluster with its own file system: no local jars (the archive has none); staging on that system
    assert ("spark.yarn.jars" in conf) == one_machine
    assert ("spark.yarn.stagingDir" in conf) == one_machine
    if not one_machine:  # staged once on that file system by the first launch (start_cluster): then taken there
        backend.staged_jars = f"{default_fs}/user/me/.sweeper/spark-jars-4/spark-jars.zip"
        backend.staged_archive = f"{default_fs}/user/me/.sweeper/env-0123/{packed_env.name}"
        staged = backend.conf()
        assert staged["spark.yarn.archive"] == backend.staged_jars and "spark.yarn.jars" not in staged
        assert staged["spark.yarn.dist.archives"] == f"{backend.staged_archive}#environment"  # Spark uploads nothing


def test_spark_takes_pysparks_python_zips_from_where_they_were_staged(packed_env: Path, tmp_path: Path) -> None:
    """#38: pyspark.zip and py4j's zip, which Spark would upload with every Python application, are staged once
    under names made of their contents, and the driver names them in PYSPARK_ARCHIVES_PATH (Spark uploads nothing)."""
    import pyspark

    from sweeper.launch.spark.yarn_jars import python_libs_uploads

    uploads = python_libs_uploads()
    files = sorted(upload.path.rsplit("/", 1)[1] for upload in uploads)
    assert files[-1] == "pyspark.zip" and files[0].startswith("py4j-") and len(files) == 2
    assert len({upload.path.rsplit("/", 1)[0] for upload in uploads}) == 1  # one directory, named by both contents
    assert uploads[0].path.startswith(f"pyspark-python-{pyspark.__version__}-")
    assert all(upload.make(tmp_path).parent.name == "lib" for upload in uploads)  # pyspark's own, not copies
    conf_dir = site(tmp_path / "conf", "yarn-site.xml", {"yarn.resourcemanager.hostname": "127.0.0.1"})
    site(conf_dir, "core-site.xml", {"fs.defaultFS": "hdfs://namenode:8020"})
    options = YarnOptions(conf_dir=conf_dir, python_archive=packed_env)
    backend = spark_yarn.YarnSpark(launches.launch("spark", "yarn"), context(tmp_path, options), tmp_path / "spark-0")
    backend.check()
    assert "PYSPARK_ARCHIVES_PATH" not in backend.variables()  # before staging: Spark finds and uploads them
    backend.staged_python_libs = tuple(f"hdfs://namenode:8020/user/me/.sweeper/{upload.path}" for upload in uploads)
    assert backend.variables()["PYSPARK_ARCHIVES_PATH"] == ",".join(backend.staged_python_libs)

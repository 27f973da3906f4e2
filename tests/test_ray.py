"""Engine ray: refused with the install hint when Ray is missing; on local, a cluster of the launch's shape
whose pool of actors lives from batch to batch, takes the fit environment, is aborted, trains one model
across its nodes (data-parallel) and leaves nothing.

The engine contract (tests/test_engine_contract.py) covers ray on local, ssh and standalone like every engine;
``sweeper check`` of a Ray grid over SSH probes Ray on each namespaced host (tests/support/netns_hosts.py).
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
import ray

from sweeper.launch.base import Granted
from sweeper.launch.registry import starter
from sweeper.workload.data import Data
from sweeper.workload.fit import FitResult
from sweeper.workload.tasks import FitTask, make_batch
from tests.support import launches
from tests.support.batches import recipe_with, replicas
from tests.support.ray_cluster import assert_no_ray_processes

# Ray missing, simulated: the interpreter runs the sweeper with `import ray` failing as it does when not installed.
WITHOUT_RAY = "import sys; sys.modules['ray'] = None; from sweeper.cli import main; sys.exit(main())"


def test_a_grid_with_ray_is_refused_with_the_install_hint_when_ray_is_missing(write_grid: Any, tmp_path: Path) -> None:
    import subprocess
    import sys

    grid = write_grid(
        {
            "name": "no-ray",
            "cluster": {"manager": "local", "nodes": 1, "cores_per_node": 2, "memory_per_node": "8GiB"},
            "sizing": {"cores_per_executor": [1], "reserve": {"cores": 0, "memory": "1GiB"}, "application_master": 0},
            "engines": ["ray"],
            "baseline": False,
            "workload": {"dataset": "digits", "epochs": [5], "trials": 1},
            "store": str(tmp_path / "store"),
        }
    )
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_RAY, "run", str(grid)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 2, done.stdout + done.stderr
    said = " ".join(done.stderr.split())  # its lines unwrapped
    assert "engine 'ray' on 'local' needs 'sweeper[ray]', which is not installed" in said, done.stderr
    assert "pip install 'sweeper[ray]'" in said
    assert "Traceback" not in done.stdout + done.stderr
    # no row was written
    assert not list((tmp_path / "store").rglob("*.parquet"))


def test_rows_record_the_ray_version_its_descriptor_names_and_a_schema_12_store_reads_it_as_null(
    tmp_path: Path,
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    import ray

    from sweeper import load_results
    from sweeper.engines import VERSION_PACKAGES, descriptor
    from sweeper.results.report.sections.measured import provenance
    from sweeper.run.versions import versions
    from sweeper.store.parquet import COLUMNS, SCHEMA_VERSION
    from tests.support.stored_rows import stored_row, write_test_rows

    ray_descriptor = descriptor("ray")
    assert ray_descriptor is not None and ray_descriptor.version_column == "ray_version"
    assert VERSION_PACKAGES["ray_version"] == "ray" and set(VERSION_PACKAGES) <= set(COLUMNS)
    assert versions()["ray_version"] == ray.__version__
    assert SCHEMA_VERSION == 13
    # a store written before schema 13: no ray_version column, schema_version 12
    path = write_test_rows(tmp_path, "s", [stored_row(measurement_key="a", engine="dask", **versions())], "p1")
    old = pq.read_table(path).drop_columns(["ray_version"])
    pq.write_table(old.set_column(0, "schema_version", pa.array([12], pa.int32())), path)
    frame = load_results(tmp_path)
    assert list(frame.columns) == list(COLUMNS) and frame["ray_version"].isna().all()
    versions_line = next(line for line in provenance(frame, "") if line.startswith("Versions: "))
    assert "dask " in versions_line and "ray" not in versions_line  # not 'ray ?': the old store's report unchanged


def test_ending_a_pool_waits_for_a_result_thread_started_but_not_yet_running() -> None:
    """CI caught an abort joining a result thread in threading's limbo (listed, not joinable): "cannot join thread
    before it is started". One that never runs is waited for until the deadline, then left."""
    from sweeper.launch.ray.session import join_by

    never_started = threading.Thread(target=lambda: None)
    started = time.monotonic()
    join_by(never_started, started + 0.2)
    assert time.monotonic() - started >= 0.2
    running = threading.Thread(target=time.sleep, args=(0.05,))
    running.start()
    join_by(running, time.monotonic() + 10)
    assert not running.is_alive()


def test_every_node_of_every_manager_takes_free_ports_not_rays_fixed_ones_and_runs_no_log_monitor() -> None:
    """Two launches on one host (two sweeps, two test runs) never collide: no port Ray would fix by default (GCS
    6379, workers 10002-19999, the dashboard agent 52365) is on a node's command line, every one is 0 (free). No node
    tails its logs for a driver that does not read them (the local launch's test sees no log monitor run)."""
    from sweeper.launch.ray.nodes import head_arguments, worker_arguments
    from sweeper.launch.ray.ssh import driver_node_arguments

    lines = {
        "head": head_arguments("/tmp/t", "10.0.0.2"),
        "worker": worker_arguments("10.0.0.2:40000", 1, 512, "10.0.0.3", "/tmp/t"),
        "driver": driver_node_arguments("10.0.0.2:40000", "10.0.0.1", "/tmp/t"),
    }
    for role, arguments in lines.items():
        ports = dict(a.removeprefix("--").split("=", 1) for a in arguments if "port" in a.split("=", 1)[0])
        expected = {"min-worker-port": "0", "max-worker-port": "0", "dashboard-agent-listen-port": "0"}
        assert ports == ({**expected, "port": "0"} if role == "head" else expected), (role, ports)
        assert "--include-log-monitor=false" in arguments, role


def _one_model_across_the_nodes(session: Any, digits: Data) -> None:
    """Data-parallel: a trainer on each node's shard, the shards put once for the launch, only weights travel."""

    def batch(epochs: int) -> list[FitTask]:
        params = {"hidden_layer_sizes": (32,), "solver": "adam"}
        return make_batch(recipe_with(), "data-parallel", params, epochs, 0, 1, labels=digits.y_train, shards=2)

    (result,) = session.run_batch(batch(30), digits)
    shipped = session._shards
    assert len({node for node, _, _ in shipped.parts}) == 2  # one shard on each worker node
    assert result.shards == 2 and result.rounds == 30 and result.accuracy > 0.8
    assert result.comm_bytes_per_round is not None
    assert 0 < result.comm_bytes_per_round < (digits.X_train.nbytes + digits.y_train.nbytes) / 4
    assert session.run_batch(batch(5), digits)[0].rounds == 5 and session._shards is shipped


def _command_line(process: psutil.Process) -> str:
    try:
        return " ".join(process.cmdline())
    except psutil.Error:  # ended meanwhile
        return ""


def _in_a_thread(session: Any, tasks: list[Any], data: Data) -> dict[str, Any]:
    """Run a batch as the runner does (in a helper thread); its results or its error."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["results"] = session.run_batch(tasks, data)
        except Exception as error:
            out["error"] = error

    thread = threading.Thread(target=run)
    thread.start()
    out["thread"] = thread
    return out


@pytest.mark.integration
def test_a_local_ray_launch_keeps_its_actors_sets_the_fit_environment_aborts_shards_and_leaves_nothing(
    digits: Data, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Also: a token another Ray left in the home (~/.ray/auth_token turns Ray's authentication on by itself) does
    not matter, and a Ray call after the launch fails instead of starting a cluster here (auto-connect off)."""
    home = tmp_path / "home"
    (home / ".ray").mkdir(parents=True)
    (home / ".ray" / "auth_token").write_text("a-token-of-another-cluster")
    monkeypatch.setenv("HOME", str(home))
    launch = launches.launch("ray", executors=2, executor_memory_mib=512)
    context = launches.context(tmp_path / "run", environment={"OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "7"})
    tasks = replicas(digits)
    slow = replicas(digits, fits=40, epochs=200, hidden=(128, 128))
    with starter("ray", "local")(launch, context) as session:
        assert session.granted == Granted(2, 1, 512)
        first: list[FitResult] = session.run_batch(tasks, digits)
        assert all(r.environment["PYTHONHASHSEED"] == "7" for r in first)  # set on the nodes, inherited by the actors
        second = _in_a_thread(session, tasks, digits)
        second["thread"].join()
        actors = {r.pid for r in first}
        assert len(actors) == 2 and {r.pid for r in second["results"]} == actors  # one pool for the launch
        aborted = _in_a_thread(session, slow, digits)  # minutes of fits, unless aborted
        while aborted[
            "thread"
        ].is_alive():  # an abort before the batch took the pool would miss it: again until it ends
            session.abort()
            aborted["thread"].join(0.2)
        assert "error" in aborted, "the batch was not aborted"
        assert {r.pid for r in session.run_batch(tasks, digits)}.isdisjoint(actors)
        _one_model_across_the_nodes(session, digits)
        assert not [p for p in psutil.Process().children(recursive=True) if "log_monitor" in _command_line(p)]
    with pytest.raises(ray.exceptions.RaySystemError, match="not been started"):
        ray.put(1)
    assert_no_ray_processes()
    assert (home / ".ray" / "auth_token").read_text() == "a-token-of-another-cluster"
    head_log = (tmp_path / "run" / "ray-0" / "ray-head.log").read_text()
    temp_dir = re.search(r"(/\S*sweeper-ray-[^/\s]+)/session_", head_log)
    assert temp_dir and not Path(temp_dir[1]).exists()


@pytest.mark.integration
def test_check_of_a_ray_grid_over_ssh_probes_ray_on_each_host_and_names_a_host_with_another_version(
    netns_ssh_hosts: Any, write_grid: Any
) -> None:
    import json
    import shlex
    import subprocess
    import sys

    import ray

    from sweeper.launch.base import LaunchError
    from sweeper.launch.options import SshCluster, SshOptions
    from sweeper.launch.ray.remote import check_ray_version
    from tests.conftest import REPO

    hosts = netns_ssh_hosts
    grid = write_grid(
        {
            "name": "ray-ssh",
            "cluster": {
                "manager": "ssh",
                "hosts": list(hosts.names),
                "cores_per_node": 1,
                "memory_per_node": "3GiB",
                "ssh": hosts.ssh_options(),
            },
            "sizing": {"cores_per_executor": [1], "reserve": {"cores": 0, "memory": "1GiB"}, "application_master": 0},
            "engines": ["ray"],
            "workload": {"dataset": "digits", "epochs": [5], "trials": 1},
        }
    )
    check = hosts.edge_command([sys.executable, "-m", "sweeper", "check", str(grid), "--json"])
    healthy = subprocess.run(check, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert healthy.returncode == 0, healthy.stdout[-3000:] + healthy.stderr[-3000:]
    probed = {c["node"]: c["detail"] for c in json.loads(healthy.stdout)["checks"] if c["check"] == "ray" and c["ok"]}
    assert probed == {name: f"Ray {ray.__version__}, as here" for name in hosts.names}
    # the second host's own copy of Ray (its environment's overlay) says it is another version: named, with both
    site = Path(sys.prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    init = shlex.quote(str(site / "ray" / "__init__.py"))
    second = hosts.servers[1]
    plant = f"cp {init} {init}.kept && echo '__version__ = \"0.0.1\"' >> {init}"
    cluster = SshCluster(hosts=tuple(hosts.addresses), options=SshOptions.from_grid(hosts.ssh_options()))
    try:
        subprocess.run(second.ssh_command("sh", "-c", shlex.quote(plant)), check=True, timeout=60)
        assert check_ray_version(hosts.addresses[0], cluster) == ray.__version__
        with pytest.raises(LaunchError, match=rf"Ray 0\.0\.1 there, {re.escape(ray.__version__)} here"):
            check_ray_version(hosts.addresses[1], cluster)
    finally:
        restore = subprocess.run(second.ssh_command("sh", "-c", shlex.quote(f"mv {init}.kept {init}")), timeout=60)
        assert restore.returncode == 0


@pytest.mark.integration
def test_a_ray_launch_over_ssh_that_fails_while_starting_leaves_nothing_on_the_hosts(
    netns_ssh_hosts: Any, tmp_path: Path
) -> None:
    """The head is started on the first host, then the start times out: the launch's teardown ends it there."""
    from sweeper.launch.base import LaunchError
    from sweeper.launch.options import SshCluster, SshOptions
    from tests.support.netns_hosts import wait_until_empty

    hosts = netns_ssh_hosts
    cluster = SshCluster(hosts=tuple(hosts.addresses), options=SshOptions.from_grid(hosts.ssh_options()))
    context = launches.context(tmp_path / "run", cluster, start_timeout_s=0.5)
    start = starter("ray", "ssh")(launches.launch("ray", "ssh", nodes=2), context)
    timed_out = rf"ray: the head on {re.escape(hosts.addresses[0])} did not start within"
    with pytest.raises(LaunchError, match=timed_out), start:
        pass
    assert not wait_until_empty(hosts)
    left = [path for index in range(len(hosts.names)) for path in (hosts.root_of(index) / "tmp").glob("sweeper-*")]
    assert not left, left
    assert_no_ray_processes()

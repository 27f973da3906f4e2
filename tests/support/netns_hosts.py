"""Test hosts as Linux network namespaces: a bridge here, one namespace per host, an sshd in each.

``netns_hosts(directory, 2)`` creates a bridge in the root namespace with the first address of a
free ``10.231.N.0/24`` (the driver's side), then for each host a namespace with loopback up and a
veth pair whose outer end is on the bridge and whose inner end carries the host's address, and
starts a key-only sshd (tests/support/sshd.py) inside it. All servers take one client key and one
known_hosts file, as the hosts of a real cluster would. The namespaces share this machine's
file system and process table, so the same Python environment is at the same path "on every
host", while every socket lives in its host's own network stack: a process bound to the wrong
address, or a peer reached on the wrong one, fails as it would across machines.

Teardown (also when the test fails, or setup fails half-way) kills every process in the
namespaces (``ip netns pids``), then deletes the namespaces, the veths and the bridge.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from tests.support.sshd import Sshd, sshd_unavailable, start_sshd

SUBNETS = "10.231.{}.0/24"  # the first free one is used; .1 is the bridge, .2, .3, ... the hosts
NETNS_DIR = Path("/run/netns")
SSH_PORT = 22  # a fresh namespace has every port free: the hosts listen where real ones do


class NetnsUnavailable(RuntimeError):
    """Network namespaces cannot be made here (not root, no ``ip``, or the kernel forbids it)."""


@dataclass
class NetnsHosts:
    """Hosts in network namespaces, their sshds and what a client needs to reach them."""

    bridge: str
    gateway: str  # the bridge's address: this (driver) side, as the hosts see it
    namespaces: list[str] = field(default_factory=list)
    addresses: list[str] = field(default_factory=list)
    veths: list[str] = field(default_factory=list)
    servers: list[Sshd] = field(default_factory=list)
    known_hosts: Path | None = None

    def ssh_options(self) -> dict[str, Any]:
        """The grid's ``cluster.ssh`` mapping for all the hosts (one key, one known_hosts file)."""
        return {**self.servers[0].ssh_options(), "known_hosts": str(self.known_hosts)}

    def namespace_of(self, pid: int) -> str | None:
        """The name of the test namespace process ``pid`` runs in (None: another one, or gone)."""
        try:
            inode = os.stat(f"/proc/{pid}/ns/net").st_ino
        except OSError:
            return None
        for name in self.namespaces:
            with contextlib.suppress(OSError):
                if os.stat(NETNS_DIR / name).st_ino == inode:
                    return name
        return None

    def pids(self, namespace: str) -> list[int]:
        """Every process in ``namespace`` (sshd included)."""
        return netns_pids(namespace)

    def listening(self, namespace: str) -> list[tuple[str, int]]:
        """Listening TCP sockets in ``namespace``: (local address, owning pid)."""
        done = ip("netns", "exec", namespace, "ss", "-Htlnp", check=False)
        found = []
        for line in done.stdout.splitlines():
            parts = line.split()
            if len(parts) < 4:
                continue
            local = parts[3]
            for pid in _ss_pids(line):
                found.append((local, pid))
        return found


def _ss_pids(line: str) -> list[int]:
    """The ``pid=N`` of an ``ss -p`` line."""
    return [int(chunk.split(",")[0]) for chunk in line.split("pid=")[1:]]


def ip(*arguments: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``ip ARGUMENTS``; with ``check`` a failure raises :class:`NetnsUnavailable` with ip's message."""
    done = subprocess.run(["ip", *arguments], capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise NetnsUnavailable(f"ip {' '.join(arguments)}: {done.stderr.strip() or done.returncode}")
    return done


def netns_unavailable() -> str | None:
    """Why namespaces cannot be made here (for ``pytest.skip``), or None when they can."""
    if shutil.which("ip") is None:
        return "ip not found: run deploy/install-test-packages.sh (Debian iproute2)"
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add); run the tests as root, as CI does"
    reason = sshd_unavailable()
    if reason:
        return reason
    probe = f"swprobe-{secrets.token_hex(3)}"
    done = ip("netns", "add", probe, check=False)
    if done.returncode != 0:
        return f"network namespaces are not permitted here: ip netns add: {done.stderr.strip()}"
    ip("netns", "del", probe, check=False)
    return None


SUBNET_LOCK = Path("/run/lock/sweeper-netns-subnets.lock")


@contextlib.contextmanager
def subnet_lock() -> Iterator[None]:
    """Hold while choosing a subnet and putting its first address on a bridge: two runs here cannot pick the same."""
    import fcntl

    SUBNET_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(SUBNET_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def free_subnet(thirds: Iterable[int] = range(256)) -> ipaddress.IPv4Network:
    """The first ``10.231.N.0/24`` (N in ``thirds``, in order) no interface here has an address in."""
    used = ip("-4", "-o", "addr", "show").stdout
    for third in thirds:
        subnet = ipaddress.IPv4Network(SUBNETS.format(third))
        if not any(f" {address}/" in used for address in list(subnet.hosts())[:8]):
            return subnet
    raise NetnsUnavailable("no free 10.231.N.0/24 subnet for the test hosts")


def netns_pids(namespace: str) -> list[int]:
    done = ip("netns", "pids", namespace, check=False)
    return [int(pid) for pid in done.stdout.split() if pid.isdigit()]


def kill_namespace(namespace: str, grace_s: float = 5.0) -> list[str]:
    """SIGTERM every process in ``namespace``, SIGKILL what is left after ``grace_s``; returns those."""
    processes = []
    for pid in netns_pids(namespace):
        with contextlib.suppress(psutil.NoSuchProcess):
            processes.append(psutil.Process(pid))
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.send_signal(signal.SIGTERM)
    _, alive = psutil.wait_procs(processes, timeout=grace_s)
    killed = []
    for process in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            killed.append(f"{process.pid}: {' '.join(process.cmdline())[:160]}")
            process.kill()
    psutil.wait_procs(alive, timeout=grace_s)
    return killed


def _add_host(hosts: NetnsHosts, index: int, address: str, prefix: int, tag: str) -> None:
    namespace, outer, inner = f"sweeper-{tag}-{index}", f"swv{tag}{index}h", f"swv{tag}{index}n"
    ip("netns", "add", namespace)
    hosts.namespaces.append(namespace)
    ip("link", "add", outer, "type", "veth", "peer", "name", inner)
    hosts.veths.append(outer)
    ip("link", "set", outer, "master", hosts.bridge)
    ip("link", "set", outer, "up")
    ip("link", "set", inner, "netns", namespace)
    ip("-n", namespace, "addr", "add", f"{address}/{prefix}", "dev", inner)
    ip("-n", namespace, "link", "set", inner, "up")
    ip("-n", namespace, "link", "set", "lo", "up")
    hosts.addresses.append(address)


def _start_servers(hosts: NetnsHosts, directory: Path) -> None:
    client_key = None
    for namespace, address in zip(hosts.namespaces, hosts.addresses, strict=True):
        server = start_sshd(directory / namespace, host=address, port=SSH_PORT, netns=namespace, client_key=client_key)
        hosts.servers.append(server)
        client_key = server.identity_file
    hosts.known_hosts = directory / "known_hosts"
    hosts.known_hosts.write_text("".join(server.known_hosts.read_text() for server in hosts.servers))


def _check_cross_traffic(hosts: NetnsHosts) -> None:
    """Every host reaches every other host's sshd (the bridge forwards between namespaces)."""
    for namespace in hosts.namespaces:
        for address in hosts.addresses:
            probe = f"import socket; socket.create_connection(({address!r}, {SSH_PORT}), timeout=5).close()"
            done = subprocess.run(
                ["ip", "netns", "exec", namespace, "python3", "-c", probe], capture_output=True, text=True, timeout=30
            )
            if done.returncode != 0:
                raise RuntimeError(f"{namespace} cannot reach {address}:{SSH_PORT}: {done.stderr.strip()[-300:]}")


def teardown(hosts: NetnsHosts) -> list[str]:
    """Stop the servers, kill every process in the namespaces, delete namespaces, veths and bridge.

    Returns the processes that were still running besides the sshds (what a launch left behind)."""
    sshd_pids = {server.process.pid for server in hosts.servers}
    leftovers = []
    for namespace in hosts.namespaces:
        leftovers += [f"{namespace}: pid {pid}" for pid in netns_pids(namespace) if pid not in sshd_pids]
    for server in hosts.servers:
        with contextlib.suppress(Exception):
            server.stop()
    for namespace in hosts.namespaces:
        kill_namespace(namespace)
        ip("netns", "del", namespace, check=False)
    for veth in hosts.veths:  # normally gone with their namespace's end
        if ip("link", "show", veth, check=False).returncode == 0:
            ip("link", "del", veth, check=False)
    ip("link", "del", hosts.bridge, check=False)
    return leftovers


@contextlib.contextmanager
def netns_hosts(directory: Path, count: int = 2) -> Iterator[NetnsHosts]:
    """``count`` hosts in network namespaces behind a bridge here, each with its sshd; all removed at the end."""
    reason = netns_unavailable()
    if reason:
        raise NetnsUnavailable(reason)
    tag = secrets.token_hex(3)
    hosts = NetnsHosts(bridge=f"swbr{tag}", gateway="")
    try:
        with subnet_lock():
            subnet = free_subnet()
            addresses = [str(a) for a in list(subnet.hosts())[: count + 1]]
            hosts.gateway = addresses[0]
            ip("link", "add", hosts.bridge, "type", "bridge")
            ip("addr", "add", f"{hosts.gateway}/{subnet.prefixlen}", "dev", hosts.bridge)
        ip("link", "set", hosts.bridge, "up")
        for index, address in enumerate(addresses[1:]):
            _add_host(hosts, index, address, subnet.prefixlen, tag)
        _start_servers(hosts, directory)
        _check_cross_traffic(hosts)
        yield hosts
    finally:
        teardown(hosts)


def wait_until_empty(hosts: NetnsHosts, wait_s: float = 15.0) -> list[str]:
    """Wait until the namespaces run nothing but their sshds (and those no session); returns what is left."""
    sshd_pids = {server.process.pid for server in hosts.servers}
    deadline = time.monotonic() + wait_s
    while True:
        left = []
        for namespace in hosts.namespaces:
            for pid in netns_pids(namespace):
                if pid in sshd_pids:
                    continue
                with contextlib.suppress(psutil.NoSuchProcess):
                    process = psutil.Process(pid)
                    if process.status() != psutil.STATUS_ZOMBIE:
                        left.append(f"{namespace}: {pid} {' '.join(process.cmdline())[:160]}")
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.3)

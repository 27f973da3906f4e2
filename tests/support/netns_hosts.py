"""Test hosts made of Linux namespaces: a bridge here, one "machine" per host, an sshd on each.

``netns_hosts(directory, 2)`` creates a bridge in the root namespace with the first address of a
free ``10.231.N.0/24`` (the driver's side), then for each host a network namespace with loopback up
and a veth pair whose outer end is on the bridge and whose inner end carries the host's address.
Each host's sshd (tests/support/sshd.py, key-only) runs as PID 1 of the host's own PID, mount and UTS
namespaces (``unshare --pid --fork --mount-proc --mount --uts``), after a script that makes the host:

- its host name (``sw-host1``, ...) and its own ``/etc/hosts``: Debian's lines with ``127.0.1.1 <own
  name>``, then every host by name (the driver reaches them by name too: :meth:`NetnsHosts.edge_command`);
- its own ``/tmp`` (a tmpfs: what a launch leaves in its scratch is on that host only);
- none of this machine's Pythons or repository (empty mounts over them, ``/dev/null`` over interpreters), and
  its own copy of the environment at the path the driver uses (as ``deploy/prepare-host.sh`` installs it): this
  venv packed with its own interpreter (``sweeper pack-env``), unpacked once, as a copy-on-write overlay per
  host, so a change made on one host (other sweeper code, a missing interpreter) is seen there and nowhere else.

All servers take one client key and one known_hosts file (by name and by address), as the hosts of a
real cluster would. A process bound to the wrong address, a peer reached on the wrong one, a daemon
that binds the address its own name resolves to there (loopback), or a PID taken for another host's,
fails as it would across machines.

Teardown (also when the test fails, or setup fails half-way) ends each sshd (PID 1: its namespace goes
with it), kills whatever else runs in the network namespaces, then deletes namespaces, veths and bridge.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from tests.support.sshd import Sshd, known_hosts_entry, sshd_unavailable, start_sshd

SUBNETS = "10.231.{}.0/24"  # the first free one is used; .1 is the bridge, .2, .3, ... the hosts
NETNS_DIR = Path("/run/netns")
SSH_PORT = 22  # a fresh namespace has every port free: the hosts listen where real ones do
HOST_NAME = "sw-host{}"
EDGE_NAME = "sw-edge"
REPO = Path(__file__).resolve().parents[2]


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
    names: list[str] = field(default_factory=list)  # sw-host1, ...: each resolves to its address on the others
    edge_hosts: Path | None = None  # the driver's /etc/hosts (edge_command)

    def edge_command(self, argv: list[str]) -> list[str]:
        """``argv`` run here with an /etc/hosts that names the hosts (in a mount namespace of its own): an edge node."""
        script = 'mount --no-canonicalize --bind "$1" /etc/hosts && shift && exec "$@"'
        return ["unshare", "--mount", "--", "sh", "-c", script, EDGE_NAME, str(self.edge_hosts), *argv]

    def root_of(self, index: int) -> Path:
        """Host ``index``'s own file system as seen from here (``/proc/PID/root`` of its PID 1)."""
        listener = self.servers[index].listener()
        if listener is None:
            raise RuntimeError(f"{self.names[index]}'s sshd is not running")
        return Path(f"/proc/{listener.pid}/root")

    def daemon_pids(self) -> set[int]:
        """The processes that make the hosts (each ``unshare`` and its sshd), not what sessions started."""
        pids = {server.process.pid for server in self.servers}
        return pids | {listener.pid for server in self.servers if (listener := server.listener()) is not None}

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


def hidden_paths(javas: bool = False) -> tuple[Path, ...]:
    """The directories of this machine (the edge) a test host or node must not see: its Pythons (the driver's venv,
    its base installation or standard library, Debian's), the repository and, with ``javas``, its Javas (a YARN
    node gets Java at paths of its own; an SSH host keeps Debian's, as ``apt-get install openjdk-17`` gives it)."""
    base = Path(sys.base_prefix).resolve()
    paths = [Path(sys.prefix), REPO / ".venv", REPO, *([Path("/usr/lib/jvm")] if javas else [])]
    paths.append(base if base not in (Path("/usr"), Path("/usr/local")) else Path(os.__file__).resolve().parent)
    for root in (Path("/usr/lib"), Path("/usr/local/lib")):
        paths += sorted(root.glob("python3*"))
    outermost: list[Path] = []  # a path under another hidden one is hidden with it (and could not be mounted on)
    for path in sorted({p.resolve() for p in paths if p.is_dir() and not p.is_symlink()}, key=lambda p: len(p.parts)):
        if not any(path.is_relative_to(outer) for outer in outermost):
            outermost.append(path)
    return tuple(outermost)


def hidden_files() -> tuple[Path, ...]:
    """This machine's Python interpreters outside the hidden directories (Debian's /usr/bin/python3.11, ...)."""
    found = [Path(sys.executable), *Path("/usr/bin").glob("python3*"), *Path("/usr/local/bin").glob("python3*")]
    hidden = hidden_paths()
    files = {p.resolve() for p in found if p.exists()}
    return tuple(sorted(f for f in files if f.is_file() and not any(f.is_relative_to(h) for h in hidden)))


def hosts_file(own: str, members: dict[str, str]) -> str:
    """/etc/hosts as Debian writes it for host ``own`` (``127.0.1.1 <own>``), plus every member by name."""
    lines = ["127.0.0.1\tlocalhost", f"127.0.1.1\t{own}", ""]
    lines += ["# The following lines are desirable for IPv6 capable hosts"]
    lines += ["::1     localhost ip6-localhost ip6-loopback", "ff02::1 ip6-allnodes", "ff02::2 ip6-allrouters", ""]
    lines += ["# the cluster"] + [f"{address}\t{host}" for host, address in members.items()]
    return "\n".join(lines) + "\n"


def host_environment(directory: Path) -> Path:
    """This environment as a host gets it (``sweeper pack-env --spark-jars``: its own interpreter, a real copy of
    sweeper, pyspark's jars for Spark's daemons), unpacked once into ``directory/environment``: every host mounts
    its own copy-on-write copy at the driver's venv path (as ``deploy/prepare-host.sh`` puts the environment at the
    same path), on a root without this machine's Pythons or repository."""
    import tarfile

    from sweeper.launch.hosts.pack_env import pack
    from sweeper.launch.hosts.packed_cache import DEV_TOOLS

    packed = pack(directory / "environment.tar", prefix=Path(sys.prefix), exclude=DEV_TOOLS, spark_jars=True)
    unpacked = directory / "environment"
    unpacked.mkdir()
    with tarfile.open(packed.path) as archive:
        archive.extractall(unpacked, filter="data")
    packed.path.unlink()
    return unpacked


def host_init(name: str, directory: Path, environment: Path) -> str:
    """The script that makes a host in its fresh mount and UTS namespaces, then runs its sshd (``exec "$@"``)."""
    q = shlex.quote
    d, venv = q(str(directory)), Path(sys.prefix).resolve()
    own = directory / "own"
    lines = [
        "#!/bin/sh",
        f"# {name}: its own PID, mount and UTS namespaces; sshd becomes its PID 1",
        "set -eu",
        f"hostname {name}",
        f"mount --no-canonicalize --bind {d}/hosts /etc/hosts",
        "mount --bind /tmp /mnt",  # the driver's /tmp, until what the host needs of it is placed
    ]
    lines += [f"mount -t tmpfs -o mode=0755,size=1m {name}-hidden {q(str(p))}" for p in hidden_paths()]
    lines += [f"mount --bind /dev/null {q(str(f))}" for f in hidden_files()]
    lines.append(f"mount -t tmpfs -o mode=1777,size=1g {name}-tmp /tmp")
    for kept in (directory, environment):  # bound back where the host's own /tmp covered them
        if kept.is_relative_to("/tmp"):
            seen = q(str(Path("/mnt") / kept.relative_to("/tmp")))
            lines += [f"mkdir -p {q(str(kept))}", f"mount --no-canonicalize --bind {seen} {q(str(kept))}"]
    options = f"lowerdir={q(str(environment))},upperdir={q(str(own / 'upper'))},workdir={q(str(own / 'work'))}"
    lines += [f"mkdir -p {q(str(venv))}", f"mount -t overlay {name}-venv -o {options} {q(str(venv))}"]
    lines += ["umount -l /mnt", 'exec "$@"', ""]
    return "\n".join(lines)


def _start_servers(hosts: NetnsHosts, directory: Path) -> None:
    everyone = {HOST_NAME.format(i + 1): address for i, address in enumerate(hosts.addresses)}
    hosts.names = list(everyone)
    environment = host_environment(directory)
    client_key = None
    for namespace, name, address in zip(hosts.namespaces, hosts.names, hosts.addresses, strict=True):
        home = directory / namespace
        for sub in ("upper", "work"):
            (home / "own" / sub).mkdir(parents=True, exist_ok=True)
        (home / "hosts").write_text(hosts_file(name, everyone))
        init = home / "sw-host-init"
        init.write_text(host_init(name, home, environment))
        init.chmod(0o755)
        prefix = ["unshare", "--pid", "--fork", "--mount-proc", "--mount", "--uts", "--kill-child", "--", str(init)]
        server = start_sshd(
            home, host=address, port=SSH_PORT, netns=namespace, prefix=prefix, client_key=client_key, timeout_s=30
        )
        hosts.servers.append(server)
        client_key = server.identity_file
    hosts.known_hosts = directory / "known_hosts"
    entries = [server.known_hosts.read_text() for server in hosts.servers]
    entries += [
        known_hosts_entry(name, SSH_PORT, Path(f"{server.host_key}.pub"))
        for name, server in zip(hosts.names, hosts.servers, strict=True)
    ]
    hosts.known_hosts.write_text("".join(entries))
    hosts.edge_hosts = directory / "edge-hosts"
    hosts.edge_hosts.write_text(hosts_file(EDGE_NAME, everyone))


def _check_cross_traffic(hosts: NetnsHosts) -> None:
    """Every host reaches every host's sshd by name, from a session on it (its own /etc/hosts, the bridge)."""
    names = ", ".join(repr(name) for name in hosts.names)
    probe = f"import socket\nfor name in ({names},): socket.create_connection((name, {SSH_PORT}), timeout=5).close()"
    for name, server in zip(hosts.names, hosts.servers, strict=True):
        command = server.ssh_command(sys.executable, "-c", shlex.quote(probe))  # the host's own environment
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"{name} cannot reach every host by name: {done.stderr.strip()[-300:]}")


def teardown(hosts: NetnsHosts) -> list[str]:
    """Stop the servers, kill every process in the namespaces, delete namespaces, veths and bridge.

    Returns the processes that were still running besides the sshds (what a launch left behind)."""
    sshd_pids = hosts.daemon_pids()
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
    sshd_pids = hosts.daemon_pids()
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

"""A real OpenSSH server for tests: key-only, on loopback (or inside a network namespace), pinned host key.

``start_sshd(directory)`` generates a host key and a client key with ``ssh-keygen``, writes an
``sshd_config`` that allows only public-key authentication with that client key, starts
``/usr/sbin/sshd -D`` on a free port and writes a ``known_hosts`` file pinning the host key, so
clients run with strict host-key checking. :meth:`Sshd.stop` ends the server and every session
it still holds. Debian's ``openssh-server`` provides sshd (``deploy/install-test-packages.sh``).
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import psutil

from sweeper.launch.options import SshCluster, SshOptions
from tests.support.leftovers import RUN_VARIABLE, in_shared_cluster

SSHD = Path("/usr/sbin/sshd")
PRIVSEP_DIR = Path("/run/sshd")  # Debian's sshd refuses to start without its privilege-separation directory


def sshd_unavailable() -> str | None:
    """Why a real sshd cannot run here, or None when it can (for ``pytest.skip``)."""
    if not SSHD.exists():
        return f"{SSHD} not found: run deploy/install-test-packages.sh (Debian openssh-server)"
    for tool in ("ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            return f"{tool} not found: run deploy/install-test-packages.sh (Debian openssh-client)"
    if not PRIVSEP_DIR.is_dir():
        try:
            PRIVSEP_DIR.mkdir(mode=0o755, parents=True)
        except OSError as error:
            return f"sshd needs {PRIVSEP_DIR} and it cannot be created ({error})"
    return None


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


def keygen(path: Path, comment: str) -> Path:
    """An unencrypted ed25519 key pair at ``path`` and ``path.pub``."""
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        check=True,
        capture_output=True,
    )
    return path


def known_hosts_entry(host: str, port: int, host_key_pub: Path) -> str:
    """A known_hosts line pinning the host key (``[host]:port`` form when the port is not 22)."""
    key_type, key = host_key_pub.read_text().split()[:2]
    name = host if port == 22 else f"[{host}]:{port}"
    return f"{name} {key_type} {key}\n"


@dataclass
class Sshd:
    """A running sshd and what a client needs to reach it."""

    host: str
    port: int
    user: str
    directory: Path
    identity_file: Path
    known_hosts: Path
    host_key: Path
    process: subprocess.Popen[bytes]
    netns: str | None = None
    log: Path = field(default=Path("/dev/null"))

    def listener(self) -> psutil.Process | None:
        """The listening sshd: the process itself, or the first ``sshd -D`` under it when a prefix started it."""
        try:
            process = psutil.Process(self.process.pid)
            if _is_listener(process):
                return process
            return next((child for child in process.children(recursive=True) if _is_listener(child)), None)
        except psutil.NoSuchProcess:
            return None

    def ssh_options(self) -> dict[str, Any]:
        """The grid's ``cluster.ssh`` mapping for this server."""
        return {
            "user": self.user,
            "port": self.port,
            "identity_file": str(self.identity_file),
            "known_hosts": str(self.known_hosts),
        }

    def ssh_command(self, *command: str) -> list[str]:
        """An ``ssh`` command line that runs ``command`` on this server (strict host-key checking)."""
        return [
            "ssh",
            "-F",
            "none",
            "-o",
            "BatchMode=yes",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            f"UserKnownHostsFile={self.known_hosts}",
            "-o",
            "IdentitiesOnly=yes",
            "-i",
            str(self.identity_file),
            "-p",
            str(self.port),
            "-l",
            self.user,
            "--",
            self.host,
            *command,
        ]

    def sessions(self) -> list[psutil.Process]:
        """Processes the server still runs (its session children and their descendants)."""
        listener = self.listener()
        if listener is None:
            return []
        with contextlib.suppress(psutil.NoSuchProcess):
            return listener.children(recursive=True)
        return []

    def stop(self, grace_s: float = 5.0) -> None:
        """End the server, then anything its sessions left behind."""
        left = self.sessions()
        listener = self.listener()
        if listener is not None and listener.pid != self.process.pid:  # a prefix (unshare) waits for it
            with contextlib.suppress(psutil.NoSuchProcess):
                listener.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(grace_s)
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(grace_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(grace_s)
        for process in left:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        psutil.wait_procs(left, timeout=grace_s)


def _is_listener(process: psutil.Process) -> bool:
    """``sshd -D ...``, also once it has named itself ``sshd: /usr/sbin/sshd -D ... [listener]``."""
    words = " ".join(process.cmdline()).removeprefix("sshd: ").split()
    return bool(words) and Path(words[0]).name == "sshd" and "-D" in words


def write_config(
    directory: Path, host: str, port: int, host_key: Path, authorized_keys: Path, extra: dict[str, str] | None = None
) -> Path:
    settings = {
        "ListenAddress": f"{host}:{port}",
        "HostKey": str(host_key),
        "PidFile": str(directory / "sshd.pid"),
        "AuthorizedKeysFile": str(authorized_keys),
        "PubkeyAuthentication": "yes",
        "PasswordAuthentication": "no",
        "KbdInteractiveAuthentication": "no",
        "HostbasedAuthentication": "no",
        "PermitRootLogin": "prohibit-password",
        "UsePAM": "no",
        "StrictModes": "no",
        "PermitUserEnvironment": "no",
        "AllowTcpForwarding": "no",
        "X11Forwarding": "no",
        "PrintMotd": "no",
        "UseDNS": "no",
        "MaxStartups": "50:30:100",  # SSHCluster and parallel host checks open several connections at once
        "MaxSessions": "50",
        "LogLevel": "ERROR",
        "Subsystem": "sftp internal-sftp",
        # what a session starts carries this test run's mark (tests/support/leftovers.py): a Spark or Ray daemon an
        # SSH launch leaves orphaned is this run's, not the other pytest-xdist worker's
        **({"SetEnv": f"{RUN_VARIABLE}={os.environ[RUN_VARIABLE]}"} if RUN_VARIABLE in os.environ else {}),
        **(extra or {}),
    }
    config = directory / "sshd_config"
    config.write_text("".join(f"{key} {value}\n" for key, value in settings.items()))
    return config


def start_sshd(
    directory: Path,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    netns: str | None = None,
    prefix: list[str] | None = None,
    client_key: Path | None = None,
    extra_config: dict[str, str] | None = None,
    timeout_s: float = 15.0,
) -> Sshd:
    """Start a key-only sshd on ``host`` (inside network namespace ``netns`` if given).

    ``client_key`` reuses an existing client key (several servers, one identity); by default a
    new one is generated in ``directory``. ``prefix`` runs sshd through a command of its own (inside
    the namespace: e.g. ``unshare`` and a script that ends with ``exec "$@"``).
    """
    reason = sshd_unavailable()
    if reason:
        raise RuntimeError(reason)
    directory.mkdir(parents=True, exist_ok=True)
    host_key = keygen(directory / "ssh_host_ed25519_key", f"sweeper-test-host-{host}")
    if client_key is None:
        client_key = keygen(directory / "id_ed25519", "sweeper-test-client")
    authorized_keys = directory / "authorized_keys"
    authorized_keys.write_text(Path(f"{client_key}.pub").read_text())
    authorized_keys.chmod(0o600)
    port = port or free_port(host if netns is None else "127.0.0.1")
    config = write_config(directory, host, port, host_key, authorized_keys, extra_config)
    command = [*(prefix or []), str(SSHD), "-D", "-e", "-f", str(config)]
    if netns is not None:
        command = ["ip", "netns", "exec", netns, *command]
    log = directory / "sshd.log"
    with log.open("ab") as log_file:
        process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    known_hosts = directory / "known_hosts"
    known_hosts.write_text(known_hosts_entry(host, port, Path(f"{host_key}.pub")))
    server = Sshd(
        host=host,
        port=port,
        user=getpass.getuser(),
        directory=directory,
        identity_file=client_key,
        known_hosts=known_hosts,
        host_key=host_key,
        process=process,
        netns=netns,
        log=log,
    )
    try:
        _wait_ready(server, timeout_s)
    except BaseException:
        server.stop()
        raise
    return server


def _wait_ready(server: Sshd, timeout_s: float) -> None:
    """Wait until the server answers a real (authenticated) command."""
    deadline = time.monotonic() + timeout_s
    while True:
        if server.process.poll() is not None:
            raise RuntimeError(f"sshd exited with {server.process.returncode}: {server.log.read_text()[-2000:]}")
        probe = subprocess.run(
            [*server.ssh_command("true")[:-3], "-o", "ConnectTimeout=2", "--", server.host, "true"],
            capture_output=True,
            text=True,
            timeout=10,
            env={**os.environ, "SSH_AUTH_SOCK": ""},
        )
        if probe.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"sshd on {server.host}:{server.port} did not answer: {probe.stderr.strip()}")
        time.sleep(0.2)


@contextlib.contextmanager
def sshd_running(directory: Path, **options: Any) -> Iterator[Sshd]:
    """``start_sshd`` as a context manager: the server is stopped when the block ends."""
    server = start_sshd(directory, **options)
    try:
        yield server
    finally:
        server.stop()


# what a launch over SSH may leave behind: its daemons, executors, Dask processes, all carrying the marker
SSH_LAUNCH_MARKERS = (
    "sweeper.launch=",
    "org.apache.spark.deploy.master.Master",
    "org.apache.spark.deploy.worker.Worker",
    "distributed.cli.dask_spec",
)


def ssh_launch_processes() -> list[str]:
    """Live processes of launches over SSH, machine-wide (the shared standalone clusters' are not)."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        try:
            if process.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            cmdline = " ".join(process.info["cmdline"] or [])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if any(marker in cmdline for marker in SSH_LAUNCH_MARKERS) and not in_shared_cluster(process):
            found.append(f"{process.pid}: {cmdline[:200]}")
    return found


def assert_nothing_left(server: Sshd, wait_s: float = 10.0) -> None:
    """No launch process, no session of the server and no launch directory in /tmp is left."""
    deadline = time.monotonic() + wait_s
    while (left := ssh_launch_processes() + [str(p) for p in server.sessions()]) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert not left, "left running:\n" + "\n".join(left)
    assert not list(Path("/tmp").glob("sweeper-spark-*")) + list(Path("/tmp").glob("sweeper-dask-*"))


def hostile(tmp_path: Path) -> tuple[str, Path]:
    """A path under ``tmp_path`` that a shell given it unquoted would turn into ``touch MARKER``, and the marker."""
    marker = tmp_path / "hostile-marker"
    return f"{tmp_path}/a'; touch {marker}; echo '", marker


def cluster_for(server: Sshd, **changes: Any) -> SshCluster:
    """``manager: ssh`` on this server's one host (``changes``: other fields of :class:`SshCluster`)."""
    cluster = SshCluster(hosts=(server.host,), options=SshOptions.from_grid(server.ssh_options()))
    return replace(cluster, **changes)

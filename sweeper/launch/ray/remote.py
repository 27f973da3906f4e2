"""Ray on the hosts of ``manager: ssh``, over SSH: its version there, and its nodes started and stopped.

Each node is a ``ray start --block`` in a session of its own (``setsid``), its pid the session's id: stopping
it is SIGTERM to that process, whose handler ends its node's processes (what ``ray stop`` does, for this node
only: ``ray stop`` would end every Ray process of the user on the host, another sweep's included), then
SIGKILL to whatever is left in the session. Imports nothing of Ray: ``sweeper check`` probes with it.
"""

from __future__ import annotations

import contextlib
import shlex
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata

from sweeper.launch.base import LaunchError
from sweeper.launch.hosts.ssh import on_hosts, run_remote
from sweeper.launch.options import SshCluster
from sweeper.launch.ray.auth import cluster_auth
from sweeper.names import UNSET_BY_DEFAULT

MARKER = "sweeper.launch"  # -X sweeper.launch=TOKEN on each ray start of a launch, to find leftovers
# the longest socket path Ray makes in a node's temp dir, past the temp dir: /session_<date>_<time>_<us>_<pid>
# /sockets/plasma_store.<n>; a Unix socket's path has at most 107 bytes
SOCKET_SUFFIX_CHARS = len("/session_2026-01-01_00-00-00_000000_4194304/sockets/plasma_store.99")
SOCKET_PATH_MAX = 107
STOP_GRACE_S = 20.0  # after SIGTERM, how long ray start may take to end its node's processes
LOG_TAIL_LINES = 8


def _local_ray_version() -> str:
    """The driver's Ray (a cluster's nodes must run the same version)."""
    return metadata.version("ray")


def _remote_ray_version(host: str, cluster: SshCluster) -> str:
    """The version of Ray that ``cluster.python`` imports on ``host``; a LaunchError naming the host if none."""
    probe = "import ray; print(ray.__version__)"
    status, out, err = run_remote(host, [cluster.python, "-c", probe], cluster.options)
    if status != 0:
        last = (err.strip().splitlines() or ["no message"])[-1]
        raise LaunchError(
            f"host {host}: {cluster.python} cannot import ray ({last}); install sweeper[ray] into that "
            "environment (deploy/prepare-host.sh)"
        )
    return out.strip().splitlines()[-1]


def check_ray_version(host: str, cluster: SshCluster) -> str:
    """The host's Ray version when it is the driver's; a LaunchError otherwise (Ray refuses mixed versions)."""
    remote, here = _remote_ray_version(host, cluster), _local_ray_version()
    if remote != here:
        raise LaunchError(f"host {host}: Ray {remote} there, {here} here; a Ray cluster runs one version on all nodes")
    return remote


def check_socket_room(temp_dir: str) -> None:
    """Ray's Unix sockets under ``temp_dir`` must fit a socket path's 107 bytes."""
    if len(temp_dir.encode()) + SOCKET_SUFFIX_CHARS > SOCKET_PATH_MAX:
        room = SOCKET_PATH_MAX - SOCKET_SUFFIX_CHARS
        raise LaunchError(
            f"ray: the launch's directory {temp_dir} is too long for Ray's sockets (at most {room} characters); "
            "set a shorter cluster.remote_dir"
        )


@dataclass
class RemoteNodes:
    """The ``ray start`` sessions of a launch on each host, and the launch's directory there."""

    cluster: SshCluster
    token: str
    scratch: str
    sessions: dict[str, list[int]] = field(default_factory=dict)  # host -> session ids (= ray start pids)

    @property
    def marker(self) -> str:
        return f"{MARKER}={self.token}"

    def log(self, host: str, number: int) -> str:
        return f"{self.scratch}/ray-node-{number}-{host}.log"  # hosts may share a file system

    def start(self, host: str, arguments: list[str], environment: Mapping[str, str]) -> int:
        """Start ``ray start --block ARGUMENTS`` on ``host`` in its own session; its pid (= session id)."""
        number = len(self.sessions.get(host, []))
        command = [self.cluster.python, "-X", self.marker, "-m", "ray.scripts.scripts", "start", "--block"]
        command += ["--disable-usage-stats", *arguments]
        lines = [
            f"cd {shlex.quote(self.scratch)} || exit 91",
            *(f"unset {name}" for name in UNSET_BY_DEFAULT if name not in environment),
            *(f"export {name}={shlex.quote(value)}" for name, value in {**environment, **cluster_auth()}.items()),
            "export RAY_USAGE_STATS_ENABLED=0",
            f"setsid nohup {shlex.join(command)} >{shlex.quote(self.log(host, number))} 2>&1 </dev/null &",
            "echo $!",
        ]
        status, out, err = run_remote(host, "\n".join(lines) + "\n", self.cluster.options)
        if status != 0 or not out.strip().isdigit():
            raise LaunchError(f"host {host}: ray start did not start ({(out + err).strip()[-300:]})")
        session = int(out.strip())
        self.sessions.setdefault(host, []).append(session)
        return session

    def ended(self, host: str) -> str | None:
        """None while every node on ``host`` runs; else which ended, with the end of its log."""
        sessions = self.sessions.get(host, [])
        if not sessions:
            return None
        probe = "; ".join(f"kill -0 {pid} 2>/dev/null || echo {number}" for number, pid in enumerate(sessions))
        _, out, _ = run_remote(host, f"{probe}; exit 0", self.cluster.options)
        if not out.split():
            return None
        return f"host {host}: ray start ended: {self.log_tail(host, int(out.split()[0]))}"

    def log_tail(self, host: str, number: int) -> str:
        with contextlib.suppress(LaunchError):
            log = shlex.quote(self.log(host, number))
            _, out, _ = run_remote(host, f"tail -n {LOG_TAIL_LINES} {log} 2>/dev/null", self.cluster.options)
            return " | ".join(line.strip() for line in out.splitlines() if line.strip())
        return ""

    def head_address(self, host: str, address_file: str, timeout_s: float) -> str:
        """HOST:PORT of the head's GCS once the head on ``host`` wrote it; a LaunchError if it ends or time passes."""
        deadline = time.monotonic() + timeout_s
        written = shlex.quote(f"{self.scratch}/{address_file}")
        while True:
            _, out, _ = run_remote(host, f"cat {written} 2>/dev/null; exit 0", self.cluster.options)
            if out.strip():
                return out.strip()
            if (why := self.ended(host)) is not None:
                raise LaunchError(f"ray: the head did not start: {why}")
            if time.monotonic() > deadline:
                raise LaunchError(f"ray: the head on {host} did not start within {timeout_s:.0f} s")
            time.sleep(0.3)

    def stop(self) -> list[str]:
        """Every node on every host stopped, whatever is left of the launch killed, its directory removed;
        what had to be killed."""
        return [line for lines in on_hosts(list(self.cluster.hosts), self._stop_host) for line in lines]

    def _stop_host(self, host: str) -> list[str]:
        sessions = " ".join(str(int(s)) for s in self.sessions.get(host, []))
        pattern = shlex.quote(f"[{MARKER[0]}]{MARKER[1:]}={self.token}")  # [s]: not matching this shell
        script = f"""
sessions="{sessions}"
alive() {{ for s in $sessions; do pgrep -s "$s" >/dev/null 2>&1 && echo "$s"; done; }}
for s in $sessions; do kill -TERM "$s" 2>/dev/null; done
waited=0
while [ -n "$(alive)" ] && [ "$waited" -lt {int(STOP_GRACE_S * 10)} ]; do sleep 0.1; waited=$((waited + 1)); done
for s in $(alive); do ps -o pid=,args= -s "$s" 2>/dev/null | cut -c1-160; pkill -KILL -s "$s"; done
for p in $(pgrep -f -- {pattern}); do echo "leftover $p"; kill -KILL "$p"; done
rm -rf {shlex.quote(self.scratch)}
exit 0
"""
        _, out, _ = run_remote(host, script, self.cluster.options, timeout_s=STOP_GRACE_S + 30)
        return [f"host {host}: killed: {line.strip()}" for line in out.splitlines() if line.strip()]

"""SSH plumbing for ``manager: ssh``: run a command on a host, check a host.

Commands run through the system ``ssh`` client (so ``~/.ssh/config``, agents and ProxyJump work
as they do for the user) with ``BatchMode=yes`` (never a password prompt), a connect timeout and
strict host-key checking against the configured ``known_hosts``. Every failure is a
:class:`LaunchError` whose message names the host and says what to fix.
"""

from __future__ import annotations

import re
import shlex
import socket
import subprocess
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

from sweeper.launch.base import LaunchContext, LaunchError
from sweeper.launch.options import SshCluster, SshOptions

if TYPE_CHECKING:
    from sweeper.planning.plan import Launch

T = TypeVar("T")

SSH_FAILED = 255  # ssh's own exit status for connection and authentication failures
MIN_JAVA = 17
REMOTE_IMPORTS = ("sweeper", "pyspark", "distributed")

_UNREACHABLE = (
    "connection refused",
    "timed out",
    "no route to host",
    "network is unreachable",
    "could not resolve hostname",
    "name or service not known",
    "temporary failure in name resolution",
    "connection closed",
    "connection reset",
    "kex_exchange_identification",
)
_AUTHENTICATION = ("permission denied", "too many authentication failures", "no more authentication methods")
_HOST_KEY = (
    "host key verification failed",
    "remote host identification has changed",
    "host key is known for",
    "no matching host key",
)


def ssh_command(host: str, command: str | Sequence[str], options: SshOptions) -> list[str]:
    """The local ``ssh`` command line that runs ``command`` (a shell string or argv) on ``host``.

    Every ``ssh`` the sweeper runs is built here. ``--`` ends the options before the destination,
    so a host (or anything after it) beginning with ``-`` is never read as an option; the user
    is the argument of ``-l``, never parsed as an option either.

    >>> ssh_command("-oProxyCommand=x", "true", SshOptions(user="-u"))[-5:]
    ['-l', '-u', '--', '-oProxyCommand=x', 'true']
    """
    remote = command if isinstance(command, str) else shlex.join(command)
    return ["ssh", *options.ssh_arguments(), "--", host, remote]


def run_remote(
    host: str,
    command: str | Sequence[str],
    options: SshOptions,
    timeout_s: float = 60.0,
    *,
    input_text: str | None = None,
) -> tuple[int, str, str]:
    """Run ``command`` on ``host``; returns (exit status, stdout, stderr) of the remote command.

    ``input_text`` goes to the command's stdin: the way secrets reach a remote process without
    appearing on any command line. Unreachable host, refused authentication, an unknown host key
    or a timeout raise :class:`LaunchError` naming the host.
    """
    try:
        done = subprocess.run(
            ssh_command(host, command, options),
            input=input_text if input_text is not None else "",
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired as error:
        raise LaunchError(
            f"ssh {options.describe(host)}: no answer within {timeout_s:.0f} s (host down or command hung)"
        ) from error
    except FileNotFoundError as error:
        raise LaunchError("the ssh client is not installed here (Debian: apt-get install openssh-client)") from error
    if done.returncode == SSH_FAILED:
        failure = _ssh_failure(host, done.stderr, options)
        if failure is not None:
            raise failure
    return done.returncode, done.stdout, done.stderr


def _ssh_failure(host: str, stderr: str, options: SshOptions) -> LaunchError | None:
    """The :class:`LaunchError` for ssh's own failure text, or None when it is not one."""
    text = stderr.lower()
    detail = _last_line(stderr)
    where = options.describe(host)
    if any(marker in text for marker in _AUTHENTICATION):
        key = f" with key {options.identity_file}" if options.identity_file else ""
        return LaunchError(
            f"host {host}: SSH authentication refused for {where}{key} ({detail}); put the public key in "
            f"the user's ~/.ssh/authorized_keys on {host} (deploy/README.md)"
        )
    if any(marker in text for marker in _HOST_KEY):
        known = options.known_hosts or "~/.ssh/known_hosts"
        return LaunchError(
            f"host {host}: host key not trusted ({detail}); add it to {known} after checking its fingerprint "
            f"(ssh-keyscan {host} >> {known})"
        )
    if any(marker in text for marker in _UNREACHABLE):
        return LaunchError(f"host {host} unreachable over SSH at {where} ({detail})")
    if "ssh:" in text or "ssh_exchange" in text or "contains invalid characters" in text:
        return LaunchError(f"host {host}: ssh to {where} failed ({detail})")
    return None


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no message"


def check_host(host: str, options: SshOptions, python: str, java: str | None = "java") -> str:
    """Check that ``host`` has the sweeper's Python environment (and Java 17+ unless ``java`` is None).

    Returns the remote pyspark directory (where ``bin/spark-class`` is). The remote Python must
    be the driver's minor version: PySpark refuses to run a driver and workers that differ.
    """
    probe = (
        "import sys, os; "
        + "; ".join(f"import {name}" for name in REMOTE_IMPORTS)
        + "; print('%d.%d' % sys.version_info[:2]); print(os.path.dirname(pyspark.__file__))"
    )
    status, out, err = run_remote(host, [python, "-c", probe], options)
    if status in (126, 127):
        raise LaunchError(
            f"host {host}: Python {python} not found; create the sweeper environment at that path on every "
            "host (deploy/prepare-host.sh) or set cluster.python"
        )
    if status != 0:
        raise LaunchError(
            f"host {host}: {python} cannot import {', '.join(REMOTE_IMPORTS)} ({_last_line(err)}); install "
            "sweeper into that environment (deploy/prepare-host.sh)"
        )
    lines = out.strip().splitlines()
    remote_version, pyspark_dir = lines[-2].strip(), lines[-1].strip()
    local_version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if remote_version != local_version:
        raise LaunchError(
            f"host {host}: {python} is Python {remote_version}, the driver here runs {local_version}; "
            "PySpark needs the same minor version on every host"
        )
    if java is not None:
        remote_java_major(host, options, java)
    return pyspark_dir


def remote_java_major(host: str, options: SshOptions, java: str) -> int:
    """The remote Java's major version; Spark 4 needs 17 or newer."""
    status, out, err = run_remote(host, f"{shlex.quote(java)} -version 2>&1", options)
    if status != 0:
        raise LaunchError(
            f"host {host}: Java not found ({java}: {_last_line(out + err)}); Spark needs Java {MIN_JAVA}+ "
            "there (Debian: apt-get install openjdk-17-jre-headless) or set cluster.java_home"
        )
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not match:
        raise LaunchError(f"host {host}: cannot read the Java version from {java} -version: {_last_line(out)}")
    major = int(match.group(1))
    if major == 1 and match.group(2):
        major = int(match.group(2))
    if major < MIN_JAVA:
        raise LaunchError(f"host {host}: Java {major} at {java}; Spark needs Java {MIN_JAVA} or newer")
    return major


def driver_address(cluster: SshCluster) -> str:
    """The driver's address as the hosts reach it: ``driver_host``, else the route towards the first host."""
    if cluster.driver_host:
        return cluster.driver_host
    return address_towards(cluster.hosts[0], cluster.options.port or 22)


def address_towards(host: str, port: int = 22) -> str:
    """This machine's address on the route to ``host`` (the driver's address as the hosts see it)."""
    try:
        target = str(socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_DGRAM)[0][4][0])
    except socket.gaierror as error:
        raise LaunchError(f"host {host}: cannot resolve its name ({error})") from error
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect((target, port))  # UDP: no packet is sent, only the route is chosen
        address: str = probe.getsockname()[0]
    return address


def resolve(host: str) -> str:
    """The IPv4 address of ``host`` (daemons bind to it, never to 0.0.0.0)."""
    try:
        address = str(socket.getaddrinfo(host, None, socket.AF_INET)[0][4][0])
    except socket.gaierror as error:
        raise LaunchError(f"host {host}: cannot resolve its name ({error})") from error
    return address


def kill_groups(host: str, options: SshOptions, groups: Sequence[int], grace_s: float = 10.0) -> list[str]:
    """End the process groups on ``host``: SIGTERM, wait up to ``grace_s``, then SIGKILL.

    Returns what was still alive after SIGTERM (empty when everything exited by itself)."""
    if not groups:
        return []
    ids = " ".join(str(int(g)) for g in groups)
    script = f"""
groups="{ids}"
alive() {{ for g in $groups; do pgrep -g "$g" >/dev/null 2>&1 && echo "$g"; done; }}
for g in $groups; do kill -TERM -- "-$g" 2>/dev/null; done
waited=0
while [ -n "$(alive)" ] && [ "$waited" -lt {int(grace_s * 10)} ]; do sleep 0.1; waited=$((waited + 1)); done
left=$(alive)
for g in $left; do ps -o pid=,args= -g "$g" 2>/dev/null | cut -c1-160; kill -KILL -- "-$g" 2>/dev/null; done
sleep 0.2
for g in $groups; do pgrep -g "$g" >/dev/null 2>&1 && echo "STILL $g"; done
exit 0
"""
    _, out, _ = run_remote(host, script, options, timeout_s=grace_s + 30)
    if "STILL" in out:
        raise LaunchError(f"host {host}: processes survived SIGKILL: {out.strip()}")
    return [line for line in out.splitlines() if line.strip()]


def groups_alive(host: str, options: SshOptions, groups: Sequence[int]) -> list[int]:
    """Which of the process groups still have a process on ``host``."""
    if not groups:
        return []
    ids = " ".join(str(int(g)) for g in groups)
    _, out, _ = run_remote(
        host, f'for g in {ids}; do pgrep -g "$g" >/dev/null 2>&1 && echo "$g"; done; exit 0', options
    )
    return [int(g) for g in out.split()]


def cluster_of(launch: Launch, context: LaunchContext) -> SshCluster:
    """The hosts of the launch (the context's options), one per planned node."""
    found = context.options
    if not isinstance(found, SshCluster) or not found.hosts:
        raise LaunchError("manager ssh needs cluster.hosts (and cluster.ssh) from the grid")
    if len(found.hosts) != len(launch.workers_per_node):
        raise LaunchError(f"the plan has {len(launch.workers_per_node)} nodes, cluster.hosts lists {len(found.hosts)}")
    return found


def on_hosts(hosts: list[str], work: Callable[[str], T]) -> list[T]:
    """``work(host)`` on every host at once; the first host's error (in host order) is raised."""
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(hosts)))) as pool:
        futures = [pool.submit(work, host) for host in hosts]
        errors = [f.exception() for f in futures]
    for error in errors:
        if error is not None:
            raise error
    return [f.result() for f in futures]

"""Each cluster manager's options from the grid, typed, carried to the launch in ``LaunchContext.options``.

Pure data: what runs commands on the hosts (``ssh_command``, ``check_host``) is in :mod:`sweeper.launch.hosts.ssh`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeper.config.managers import CONNECT_TIMEOUT_S, STRICT_HOST_KEY_CHECKING, descriptor, resolve

if TYPE_CHECKING:
    from sweeper.config.grid import Grid


@dataclass(frozen=True)
class LocalOptions:
    """``manager: local`` (and every dry-run launch): nothing beyond the plan."""

    @classmethod
    def from_grid(cls, grid: Grid) -> LocalOptions:
        """Nothing of the grid: a local launch runs on the plan's shape alone."""
        return cls()


@dataclass(frozen=True)
class SshOptions:
    """How to reach the hosts: the grid's ``cluster.ssh`` mapping (every key optional).

    >>> SshOptions.from_grid({"user": "sweeper", "port": 2222}).ssh_arguments()[-4:]
    ['-p', '2222', '-l', 'sweeper']
    """

    user: str | None = None
    port: int | None = None
    identity_file: str | None = None
    known_hosts: str | None = None
    strict_host_key_checking: bool = STRICT_HOST_KEY_CHECKING
    connect_timeout_s: float = CONNECT_TIMEOUT_S

    @classmethod
    def from_grid(cls, ssh: Mapping[str, Any] | Iterable[tuple[str, Any]] | None) -> SshOptions:
        """From the grid's ``cluster.ssh`` (a mapping, or the validated grid's sorted key/value pairs)."""
        values = dict(ssh.items() if isinstance(ssh, Mapping) else ssh or ())
        return cls(
            user=str(values["user"]) if values.get("user") is not None else None,
            port=int(values["port"]) if values.get("port") is not None else None,
            identity_file=_expand(values.get("identity_file")),
            known_hosts=_expand(values.get("known_hosts")),
            strict_host_key_checking=bool(values.get("strict_host_key_checking", STRICT_HOST_KEY_CHECKING)),
            connect_timeout_s=float(values.get("connect_timeout_s", CONNECT_TIMEOUT_S)),
        )

    def ssh_arguments(self) -> list[str]:
        """``ssh`` options (before the host name)."""
        arguments = [
            "-o",
            "BatchMode=yes",
            "-o",
            f"ConnectTimeout={max(1, round(self.connect_timeout_s))}",
            "-o",
            "ServerAliveInterval=15",
            "-o",
            "LogLevel=ERROR",
        ]
        if self.strict_host_key_checking:
            arguments += ["-o", "StrictHostKeyChecking=yes"]
            if self.known_hosts:
                arguments += ["-o", f"UserKnownHostsFile={self.known_hosts}"]
        else:
            arguments += ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null"]
        if self.identity_file:
            arguments += ["-o", "IdentitiesOnly=yes", "-i", self.identity_file]
        if self.port is not None:
            arguments += ["-p", str(self.port)]
        if self.user:
            arguments += ["-l", self.user]
        return arguments

    def asyncssh_options(self) -> dict[str, Any]:
        """The same options as ``asyncssh.connect`` keywords (Dask's SSHCluster ``connect_options``)."""
        options: dict[str, Any] = {"connect_timeout": self.connect_timeout_s}
        if self.user:
            options["username"] = self.user
        if self.port is not None:
            options["port"] = self.port
        if self.identity_file:
            options["client_keys"] = [self.identity_file]
        if not self.strict_host_key_checking:
            options["known_hosts"] = None
        elif self.known_hosts:
            options["known_hosts"] = self.known_hosts
        return options

    def describe(self, host: str) -> str:
        """``user@host:port`` as the messages show it."""
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port is not None else ""
        return f"{user}{host}{port}"


@dataclass(frozen=True)
class SshCluster:
    """The hosts of ``manager: ssh`` and what runs on them.

    ``python`` is the interpreter of the sweeper's environment on every host (the same path on
    each, see deploy/README.md); ``java_home`` the JDK there (empty: ``java`` on the remote PATH);
    ``remote_dir`` the parent of each launch's scratch directory on the hosts. ``driver_host``
    (``cluster.ssh.driver_host``) is this machine's address as the hosts reach it; empty: the
    address on the route to the first host. ``dask_tls`` (``cluster.ssh.dask_tls``) secures
    Dask's traffic with TLS and certificates made for each launch.
    """

    hosts: tuple[str, ...]
    options: SshOptions = field(default_factory=SshOptions)
    python: str = sys.executable
    java_home: str | None = None
    remote_dir: str = "/tmp"
    driver_host: str | None = None
    dask_tls: bool = False

    @classmethod
    def from_grid(cls, grid: Grid) -> SshCluster:
        """From a validated grid: ``cluster.hosts``, ``cluster.ssh`` and, where the grid sets them,
        ``cluster.python``, ``cluster.java_home``, ``cluster.remote_dir`` (else this class's defaults)."""
        ssh = dict(grid.cluster_key("ssh") or ())
        given = {name: grid.cluster_key(name) for name in ("python", "java_home", "remote_dir")}
        return cls(
            hosts=tuple(grid.cluster_key("hosts") or ()),
            options=SshOptions.from_grid(ssh),
            driver_host=ssh.get("driver_host") or None,
            dask_tls=bool(ssh.get("dask_tls", False)),
            **{name: value for name, value in given.items() if value},
        )

    @property
    def java(self) -> str:
        return f"{self.java_home.rstrip('/')}/bin/java" if self.java_home else "java"


def _expand(path: Any) -> str | None:
    return os.path.expanduser(str(path)) if path else None


@dataclass(frozen=True)
class YarnOptions:
    """``manager: yarn``: the cluster's client configuration, the queue, the packed environment."""

    conf_dir: Path | None = None  # cluster.hadoop_conf_dir; None: HADOOP_CONF_DIR or YARN_CONF_DIR, read at launch
    queue: str | None = None  # cluster.queue; None: YARN's default queue
    python_archive: Path | None = None  # cluster.python_archive (sweeper pack-env); None: packed at the first launch
    java_home: str | None = None  # cluster.java_home: a JDK 17+ at this path on every node, for Spark's containers

    @classmethod
    def from_grid(cls, grid: Grid) -> YarnOptions:
        """From a validated grid: ``cluster.hadoop_conf_dir``, ``queue``, ``python_archive``, ``java_home``."""
        conf_dir, archive = grid.cluster_key("hadoop_conf_dir"), grid.cluster_key("python_archive")
        return cls(
            conf_dir=Path(conf_dir) if conf_dir else None,
            queue=grid.cluster_key("queue") or None,
            python_archive=Path(archive) if archive else None,
            java_home=grid.cluster_key("java_home") or None,
        )


@dataclass(frozen=True)
class StandaloneOptions:
    """``manager: standalone``: the clusters already running."""

    spark_master: str | None = None  # spark://HOST:PORT (engines spark, spark-mllib)
    dask_scheduler: str | None = None  # tcp://HOST:PORT (engine dask)
    ray_address: str | None = None  # HOST:PORT of a Ray head (engine ray)

    @classmethod
    def from_grid(cls, grid: Grid) -> StandaloneOptions:
        """From a validated grid: the addresses of ``cluster.spark_master``, ``dask_scheduler``, ``ray_address``."""
        return cls(*(grid.cluster_key(name) for name in ("spark_master", "dask_scheduler", "ray_address")))


ManagerOptions = LocalOptions | SshCluster | YarnOptions | StandaloneOptions


def options_for(grid: Grid) -> ManagerOptions:
    """The options of the grid's manager, of the type its descriptor names (sweeper/config/managers.py)."""
    options: ManagerOptions = resolve(descriptor(grid.manager).options).from_grid(grid)
    return options

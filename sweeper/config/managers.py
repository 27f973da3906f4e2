"""One descriptor per cluster manager, registered in one place (as :mod:`sweeper.engines` for engines).

A manager's descriptor holds what every layer needs to know of it: its name, the ``cluster`` keys it owns
(declared here with their kinds, defaults and README rows; :mod:`sweeper.config.sections` puts them in the
``cluster`` section), its options type (``sweeper.launch.options``: built from the grid, carried to the
launch), its preflight (``sweeper.preflight.managers``: what ``sweeper check`` runs) and its hand command
(``sweeper.planning.hand_commands``: the PySpark shell ``sweeper plan`` shows). Those three live in the layers
above this one and are named as ``module:attribute``, imported when first used (:func:`resolve`), as
``launch/registry.py`` names backends; ``tests/test_engine_descriptors.py`` resolves every one.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from sweeper.config.schema import Boolean, Field, Integer, Number, Section, Text
from sweeper.names import MANAGERS

LOCAL, YARN, SSH_MANAGER, STANDALONE = MANAGERS
MAX_PORT = 65535
MAX_CONNECT_TIMEOUT_S = 3600.0
STRICT_HOST_KEY_CHECKING = True  # cluster.ssh.strict_host_key_checking's default
CONNECT_TIMEOUT_S = 10  # cluster.ssh.connect_timeout_s's default

SSH = Section(
    "cluster.ssh",
    (
        Field("user"),
        Field("port", Integer(MAX_PORT)),
        Field("identity_file", Text(shell=True)),
        Field("known_hosts", Text(shell=True)),
        Field("strict_host_key_checking", Boolean(), default=STRICT_HOST_KEY_CHECKING),
        Field("connect_timeout_s", Number(0.0, MAX_CONNECT_TIMEOUT_S), default=CONNECT_TIMEOUT_S),
        Field("driver_host"),
        Field("dask_tls", Boolean(), default=False),
    ),
)

# The cluster keys the managers own, in the order the ``cluster`` section (and the README's table) lists them.
MANAGER_FIELDS = (
    Field(
        "hosts",
        doc=(
            "`ssh`: host names or IP addresses; the first runs the Spark master and Dask scheduler. A "
            "name is refused only for what `ssh` or a shell would interpret, as OpenSSH itself checks: "
            "1 to 255 characters, not starting with `-`, no whitespace, control characters, `'` `\"` `$` "
            "`` ` `` `\\` `;` `&` `\\|` `<` `>` `(` `)` `{` `}`, nor `/` `@` `,` or `:` (but in an IPv6 "
            "address such as `fe80::1%eth0`); `node_1.lan` and Docker names are fine"
        ),
    ),
    Field(
        "ssh",
        doc=(
            "`ssh`: `user` (as OpenSSH takes it: 1 to 255 characters, not starting with `-`, no "
            "whitespace, control characters or the shell characters refused in a host name; `@` and `.` "
            "are fine, as in `john.doe@corp.example.com` of SSSD or Active Directory), `port` (1 to "
            "65535), `identity_file`, `known_hosts`, `strict_host_key_checking` "
            f"(default {str(STRICT_HOST_KEY_CHECKING).lower()}; a YAML "
            f'boolean, so `"false"` in quotes is refused), `connect_timeout_s` ({CONNECT_TIMEOUT_S}; in (0, 3600]); '
            "`driver_host` (this machine's host name or IP address as the hosts reach it; default: its "
            "address on the route to the first host), `dask_tls` (default false: TLS with a key pair "
            "made per launch)"
        ),
        section=SSH,
    ),
    Field(
        "python",
        Text(shell=True),
        shown_default="this interpreter's path",
        doc="`ssh`: the sweeper environment's Python on every host",
    ),
    Field(
        "java_home",
        Text(shell=True),
        shown_default="`java` on the remote PATH; yarn: the NodeManager's",
        doc=(
            "`ssh`: a JDK 17+ at the same path on every host; `yarn`: a JDK 17+ at this path on every node, "
            "the `JAVA_HOME` of Spark's ApplicationMaster and executors (Hadoop 3.3 NodeManagers run Java 8 "
            "or 11, too old for Spark 4)"
        ),
    ),
    Field(
        "remote_dir",
        Text(shell=True),
        shown_default="`/tmp`",
        doc="`ssh`: where launches keep scratch files on the hosts",
    ),
    Field("queue", Text(shell=True), shown_default="`default`", doc="`yarn`: the queue applications are submitted to"),
    Field(
        "hadoop_conf_dir",
        Text(shell=True),
        shown_default="`HADOOP_CONF_DIR`",
        doc="`yarn`: the cluster's client configuration",
    ),
    Field(
        "python_archive",
        doc=(
            "`yarn`: a packed environment (`sweeper pack-env env.tar.gz`; `.tar.gz`, `.tgz`, `.tar`, "
            "`.zip`) shipped with every application and unpacked in its containers; it carries its own "
            "interpreter. Unset: this environment is packed at the first launch (cached by content under "
            "`~/.cache/sweeper/envs`) unless the cluster's file system is `file:` (one machine)"
        ),
    ),
    Field(
        "spark_master",
        Text(shell=True),
        shown_default="required with `standalone`",
        doc="`spark://HOST:PORT` of a Spark master already running",
    ),
    Field(
        "dask_scheduler",
        Text(shell=True),
        shown_default="required with `standalone`",
        doc="`tcp://HOST:PORT` of a Dask scheduler already running",
    ),
    Field(
        "ray_address",
        Text(shell=True),
        shown_default="required with `standalone` and engine `ray`",
        doc=(
            "`HOST:PORT` of a running Ray cluster's head; this machine must be one of its nodes "
            "(`ray start --address HOST:PORT --num-cpus 0` makes it one without work)"
        ),
    ),
)


@dataclass(frozen=True)
class ManagerDescriptor:
    """A cluster manager as the grid, the launch, ``sweeper check`` and ``sweeper plan`` see it.

    ``summary``: what the ``cluster.manager`` row says of it; ``keys``: the ``cluster`` keys it owns (a key two
    managers read, ``java_home``, is owned by both); ``on_this_machine``: its launches run here (no check to
    run first, the hand commands' host is 127.0.0.1, a node larger than this machine is warned of);
    ``options``, ``preflight`` and ``hand_command``: ``module:attribute`` in the layers above (:func:`resolve`).
    """

    name: str
    summary: str | None
    keys: tuple[str, ...]
    options: str  # a class of sweeper.launch.options with from_grid(grid)
    preflight: str  # (options, plan, kill_orphans) -> Preflight
    hand_command: str  # (launch, grid) -> the pyspark line on the launch's shape
    on_this_machine: bool = False

    @property
    def fields(self) -> tuple[Field, ...]:
        """The ``cluster`` keys the manager owns, with their kinds, defaults and README rows."""
        return tuple(field for field in MANAGER_FIELDS if field.name in self.keys)


_OPTIONS, _PREFLIGHT, _HANDS = "sweeper.launch.options", "sweeper.preflight.managers", "sweeper.planning.hand_commands"
DESCRIPTORS = (  # in the order of names.MANAGERS
    ManagerDescriptor(
        LOCAL,
        "this machine",
        (),
        f"{_OPTIONS}:LocalOptions",
        f"{_PREFLIGHT}:on_this_machine",
        f"{_HANDS}:local_cluster_pyspark",
        on_this_machine=True,
    ),
    ManagerDescriptor(
        YARN,
        None,
        ("java_home", "queue", "hadoop_conf_dir", "python_archive"),
        f"{_OPTIONS}:YarnOptions",
        f"{_PREFLIGHT}:yarn",
        f"{_HANDS}:yarn_pyspark",
    ),
    ManagerDescriptor(
        SSH_MANAGER,
        None,
        ("hosts", "ssh", "python", "java_home", "remote_dir"),
        f"{_OPTIONS}:SshCluster",
        f"{_PREFLIGHT}:ssh",
        f"{_HANDS}:master_pyspark",
    ),
    ManagerDescriptor(
        STANDALONE,
        "existing master/scheduler",
        ("spark_master", "dask_scheduler", "ray_address"),
        f"{_OPTIONS}:StandaloneOptions",
        f"{_PREFLIGHT}:standalone",
        f"{_HANDS}:master_pyspark",
    ),
)
BY_NAME = {manager.name: manager for manager in DESCRIPTORS}


def descriptor(name: str) -> ManagerDescriptor:
    """The descriptor of manager ``name`` (one of ``names.MANAGERS``, as a validated grid holds).

    >>> descriptor("ssh").keys[:2], descriptor("local").on_this_machine
    (('hosts', 'ssh'), True)
    """
    return BY_NAME[name]


def owners(key: str) -> tuple[str, ...]:
    """The managers that own ``cluster`` key ``key``.

    >>> owners("java_home"), owners("nodes")
    (('yarn', 'ssh'), ())
    """
    return tuple(manager.name for manager in DESCRIPTORS if key in manager.keys)


def manager_doc() -> str:
    """The README's meaning of ``cluster.manager``: each manager, with its summary where it has one.

    >>> manager_doc()
    '`local` (this machine), `yarn`, `ssh`, `standalone` (existing master/scheduler)'
    """
    return ", ".join(f"`{m.name}`" + (f" ({m.summary})" if m.summary else "") for m in DESCRIPTORS)


def resolve(reference: str) -> Any:
    """The object a descriptor names as ``module:attribute``, its module imported now (it lies in a layer above)."""
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)

"""What both engines on ``manager: yarn`` read about the cluster: its client configuration, the packed environment."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from sweeper.launch.base import LaunchContext, LaunchError
from sweeper.launch.hosts.hadoop_conf import HadoopConf, HadoopConfError, read_hadoop_conf
from sweeper.launch.hosts.packed_cache import packed_environment
from sweeper.launch.hosts.yarn_client import YarnClient, hadoop_lib
from sweeper.launch.options import YarnOptions
from sweeper.planning.plan import Launch

ARCHIVE_LINK = "environment"  # where YARN unpacks cluster.python_archive in every container
SWEEPER_TAG = "sweeper"  # every application a sweep starts carries it, besides its own name


def _yarn_options(context: LaunchContext) -> YarnOptions:
    """The launch's YARN options (a YARN launch of a grid of another manager has none)."""
    if not isinstance(context.options, YarnOptions):
        raise LaunchError(f"manager yarn needs the grid's yarn options, got {type(context.options).__name__}")
    return context.options


def hadoop_conf(options: YarnOptions) -> HadoopConf:
    """The cluster's client configuration (the grid's directory, else the environment's), checked for use."""
    try:
        conf = read_hadoop_conf(options.conf_dir)
        problems = conf.problems()
    except HadoopConfError as error:
        raise LaunchError(str(error)) from error
    if problems:
        raise LaunchError("; ".join(problems))
    return conf


def python_archive(options: YarnOptions) -> Path | None:
    """``cluster.python_archive``, if set; it must still be there."""
    archive = options.python_archive
    if archive is not None and not archive.is_file():
        raise LaunchError(f"cluster.python_archive {archive} is gone (make it again with: sweeper pack-env {archive})")
    return archive


def shipped_environment(options: YarnOptions, conf: HadoopConf) -> tuple[Path | None, float]:
    """The environment YARN ships to the containers, and the seconds spent packing it here: ``cluster.python_archive``,
    else this one packed (nodes of their own), else none (``fs.defaultFS`` ``file:``: the nodes are this machine)."""
    archive = python_archive(options)
    if archive is not None or conf.default_fs.startswith("file:"):
        return archive, 0.0
    return packed_environment()


def container_python(archive: Path | None) -> str:
    """The Python that runs fits in a container: the unpacked archive's, else this one's same path."""
    return f"./{ARCHIVE_LINK}/bin/python" if archive is not None else sys.executable


def application_tags(name: str) -> str:
    """The YARN tags of an application (lower case, as YARN stores them): ``sweeper`` and its name."""
    return f"{SWEEPER_TAG},{name.lower()}"


def driver_address(conf: HadoopConf) -> str:
    """This machine's address on the route to the ResourceManager: where containers reach the driver.

    A client on an edge node must give its cluster-facing address to Spark's ApplicationMaster and to
    Dask's workers; 127.0.0.1 only works when the whole cluster is this machine (and is then what this
    returns, since the route to a loopback ResourceManager leaves from loopback). No packet is sent.
    """
    from sweeper.launch.hosts.ssh import address_towards

    errors = []
    for url in conf.resource_manager_urls():
        parts = urlsplit(url)
        try:
            return address_towards(parts.hostname or "", parts.port or 8088)
        except (LaunchError, OSError) as error:
            errors.append(f"{parts.hostname}: {error}")
    raise LaunchError(f"manager yarn: no route from here to the ResourceManager ({'; '.join(errors)})")


def queue_held_message(held_s: float, queue: str | None, am_in_driver: bool = False) -> str:
    """The failed row's error when YARN kept the application waiting for room (``am_in_driver``: or for its
    ApplicationMaster, run by the driver, to register)."""
    unreached = (
        ", or this machine did not reach the ResourceManager's scheduler address (yarn.resourcemanager.scheduler"
        ".address, port 8030), where Spark's ApplicationMaster, run by the driver, registers (sweeper check tries it)"
        if am_in_driver
        else ""
    )
    return (
        f"yarn: the queue held the application ACCEPTED for {held_s:.0f} s (workload.start_timeout_s) "
        f"in queue {queue or 'default'}: the cluster had no room for it{unreached}; it was killed"
    )


def check_placement(engine: str, launch: Launch, node_managers: Iterable[str]) -> None:
    """Fail the launch when YARN put more executors on a NodeManager than the plan gives a node.

    ``node_managers`` names the NodeManager of each executor. YARN places containers where they fit; with its
    default resource calculator only memory counts, so a node with room can take more executors than it has
    cores for, and the launch measures an oversubscribed shape instead of the planned one.
    """
    per_node = Counter(node_managers)
    allowed = max(launch.workers_per_node, default=0)
    crowded = {node: count for node, count in per_node.items() if count > allowed}
    if crowded:
        layout = ", ".join(f"{node}: {count}" for node, count in sorted(per_node.items()))
        raise LaunchError(
            f"{engine} on yarn: YARN placed executors {layout}; the plan allows at most {allowed} per node. "
            "Describe the NodeManagers in the grid (cluster.cores_per_node and memory_per_node as "
            "yarn.nodemanager.resource.cpu-vcores/memory-mb plus the reserve), or let YARN count cores: "
            "yarn.scheduler.capacity.resource-calculator=org.apache.hadoop.yarn.util.resource.DominantResourceCalculator"
        )


@dataclass(frozen=True)
class YarnSite:
    """What a launch on ``manager: yarn`` knows of the cluster before it starts, checked (a LaunchError if not)."""

    options: YarnOptions
    conf: HadoopConf  # the client configuration
    archive: Path | None  # the packed environment on this machine (cluster.python_archive, else packed here)
    client: YarnClient
    host: str  # this machine's address towards the ResourceManager (:func:`driver_address`)
    packed_s: float = 0.0  # the time this launch spent packing the environment (the first launch of a sweep)

    @property
    def local_file_system(self) -> bool:
        """Whether the cluster's default file system is ``file:``: every container reads this machine's files."""
        return self.conf.default_fs.startswith("file:")

    @classmethod
    def of(cls, context: LaunchContext) -> YarnSite:
        """The site of a launch's context."""
        options = _yarn_options(context)
        conf = hadoop_conf(options)
        host = driver_address(conf)
        archive, packed_s = shipped_environment(options, conf)
        return cls(options, conf, archive, YarnClient(conf, hadoop_lib()), host, packed_s)

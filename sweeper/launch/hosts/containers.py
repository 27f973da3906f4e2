"""One shell command in N YARN containers: ``sweeper.yarn.Containers`` (deploy/yarn), Dask's workers and the probe.

Its ApplicationMaster asks for the containers, runs the command in each, and ends when all have ended.
The packed environment is named by its place on the cluster's file system, staged there once per sweep
(:func:`sweeper.launch.hosts.staging.staged_archive`, the copy Spark's launches use too), and YARN
localizes it as a public archive (the ApplicationMaster decides as Spark does: public when everyone may
read the file, private otherwise): each NodeManager downloads and unpacks it once into its public cache,
for every later application of either engine, under ``./environment`` of each container. Hadoop's
distributedshell, used before, uploaded the archive again into every application's own directory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sweeper.launch.hosts.hadoop_conf import HadoopConf
from sweeper.launch.hosts.staging import staged_archive
from sweeper.launch.hosts.yarn import ARCHIVE_LINK, application_tags
from sweeper.launch.hosts.yarn_client import hadoop_java

CONTAINERS_CLIENT = "sweeper.yarn.Containers"
AM_MEMORY_MIB = 512  # the ApplicationMaster's container (Spark's spark.yarn.am.memory; its overhead: Spark's rule)


@dataclass(frozen=True)
class ContainerShape:
    """What each container gets: the scheduler's memory (MiB) and vcores."""

    containers: int
    memory_mib: int
    vcores: int


def shipped_archive(conf: HadoopConf, lib: Path, archive: Path | None) -> tuple[str | None, float]:
    """``URI#environment`` of the packed environment for the containers, and the seconds spent staging it here.

    On a cluster with a file system of its own the archive is staged there once (0 s when an earlier launch of this
    run, Spark's included, staged or found it; one look when an earlier sweep did); on ``file:`` (one machine) the
    NodeManagers read it where it is.
    """
    if archive is None:
        return None, 0.0
    if conf.default_fs.startswith("file:"):
        return f"{archive.resolve()}#{ARCHIVE_LINK}", 0.0
    uri, staged_s = staged_archive(conf, lib, archive)
    return f"{uri}#{ARCHIVE_LINK}", staged_s


def containers_command(
    conf: HadoopConf,
    lib: Path,
    name: str,
    command: str,
    shape: ContainerShape,
    environment: dict[str, str],
    archive: str | None = None,
    queue: str | None = None,
) -> list[str]:
    """The client that submits the application ``name`` (tagged, in ``queue``) and follows it until it ends.

    ``command`` runs under ``/bin/bash -c "..."`` in each container: it must hold no double quote.
    """
    if '"' in command:
        raise ValueError(f"a container command cannot hold a double quote: {command}")
    arguments = [
        *hadoop_java(conf, lib, CONTAINERS_CLIENT),
        "--name", name,
        "--tags", application_tags(name),
        "--containers", str(shape.containers),
        "--memory-mib", str(shape.memory_mib),
        "--vcores", str(shape.vcores),
        "--am-memory-mib", str(AM_MEMORY_MIB),
        "--command", command,
    ]  # fmt: skip
    if archive is not None:
        arguments += ["--archive", archive]
    if queue:
        arguments += ["--queue", queue]
    for key, value in environment.items():
        arguments += ["--env", f"{key}={value}"]
    return arguments

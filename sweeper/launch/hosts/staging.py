"""Files put once on the cluster's file system and reused by every application of a sweep (and later sweeps).

On a cluster with a file system of its own (``fs.defaultFS`` hdfs:// ...) the nodes localize what an
application names from there. Left to themselves, Spark uploads pyspark's ~460 MB of jars and the packed
environment into every application's staging directory. Instead each is put once under the Hadoop user's
home, ``.sweeper/<name>``, where ``<name>`` says what it holds (pyspark's version, the archive's content
hash): a partial upload is made under another name and renamed when complete, so a directory of that name
is always whole, and the NodeManagers keep what they localized from it in their cache across applications.
Hadoop's own ``FsShell`` (``hadoop fs``) does the work, on the client configuration.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path

from sweeper.launch.base import LaunchError
from sweeper.launch.hosts.hadoop_conf import HadoopConf
from sweeper.launch.hosts.yarn_client import hadoop_java

FS_SHELL = "org.apache.hadoop.fs.FsShell"
STAGED: dict[tuple[str, str], str] = {}  # (fs.defaultFS, name) -> its directory, staged or found by this process


def fs_shell(conf: HadoopConf, lib: Path, *arguments: str, timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
    """``hadoop fs ARGUMENTS`` on the cluster's configuration."""
    command = [*hadoop_java(conf, lib, FS_SHELL, heap_mib=256), *arguments]
    try:
        return subprocess.run(
            command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired as error:
        raise LaunchError(f"hadoop fs {arguments[0]}: no end within {timeout_s:.0f} s") from error


def sweeper_home(conf: HadoopConf) -> str:
    """``<fs.defaultFS>/user/<Hadoop user>/.sweeper``: where staged files go."""
    user = os.environ.get("HADOOP_USER_NAME") or getpass.getuser()
    return f"{conf.default_fs.rstrip('/')}/user/{user}/.sweeper"


def stage_once(conf: HadoopConf, lib: Path, name: str, files: Callable[[Path], Sequence[Path]]) -> tuple[str, float]:
    """The directory ``.sweeper/<name>``, uploaded unless it is there; and the seconds spent here.

    ``files(scratch)`` gives what to upload (made in a scratch directory if need be); it is called only when the
    directory is not there yet. A directory found there (staged by an earlier launch, run or sweep) costs the
    one look for it; one found earlier by this process costs nothing.
    """
    key = (conf.default_fs, name)
    directory = f"{sweeper_home(conf)}/{name}"
    if key in STAGED:
        return STAGED[key], 0.0
    started = time.monotonic()
    if fs_shell(conf, lib, "-test", "-d", directory).returncode != 0:
        with tempfile.TemporaryDirectory(prefix="sweeper-staging-") as scratch:
            uploads = files(Path(scratch))
            _upload(conf, lib, name, directory, uploads)
            size_mib = sum(path.stat().st_size for path in uploads) / 2**20
        print(  # into the launch's log (its standard error)
            f"sweeper: staged {name} ({size_mib:.0f} MiB) in {directory} in {time.monotonic() - started:.1f} s "
            "(once; later applications reuse it)",
            file=sys.stderr,
            flush=True,
        )
    STAGED[key] = directory
    return directory, time.monotonic() - started


def _upload(conf: HadoopConf, lib: Path, name: str, directory: str, files: Sequence[Path]) -> None:
    """Put ``files`` in ``directory`` whole: into a partial directory first, renamed when complete."""
    partial = f"{directory}.partial-{uuid.uuid4().hex[:8]}"
    for step in (("-mkdir", "-p", partial), ("-put", *map(str, files), partial), ("-mv", partial, directory)):
        done = fs_shell(conf, lib, *step)
        if done.returncode != 0:
            fs_shell(conf, lib, "-rm", "-r", "-f", "-skipTrash", partial)
            if step[0] == "-mv" and fs_shell(conf, lib, "-test", "-d", directory).returncode == 0:
                return  # another sweep staged it meanwhile
            raise LaunchError(f"could not stage {name} in {directory}: {done.stderr.strip()[-800:]}")


@lru_cache(maxsize=8)
def _content_hash(path: Path, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()[:16]


def staged_archive(conf: HadoopConf, lib: Path, archive: Path) -> tuple[str, float]:
    """The packed environment on the cluster's file system (``.sweeper/env-<content hash>/<name>``), and the seconds
    spent staging it here, hashing included (0 when an earlier launch of this process staged or found the same
    archive; a look, about a second, when an earlier sweep did)."""
    started = time.monotonic()
    stat = archive.stat()
    name = f"env-{_content_hash(archive.resolve(), stat.st_size, stat.st_mtime_ns)}"
    hashed_s = time.monotonic() - started  # 0 once cached
    directory, staged_s = stage_once(conf, lib, name, lambda _: [archive])
    return f"{directory}/{archive.name}", staged_s + (hashed_s if staged_s else 0.0)

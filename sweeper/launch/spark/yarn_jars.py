"""pyspark's jars on the cluster's file system, uploaded once and reused by every Spark application on YARN.

With ``cluster.python_archive`` on a cluster with its own file system (``fs.defaultFS`` hdfs:// ...), the
nodes have no pyspark: left alone, Spark uploads its ~460 MB of jars into every application's staging
directory, and every NodeManager localizes them again for each application. Instead they are put once under
``<fs.defaultFS>/user/<user>/.sweeper/spark-jars-<pyspark version>/`` (a partial upload is made under another
name and renamed when complete, so a directory of that name is always whole) and ``spark.yarn.jars`` points
there: Spark uploads nothing, and the NodeManagers keep the jars in their public cache across applications.
Hadoop's own ``FsShell`` (``hadoop fs``) does the work, on the client configuration.
"""

from __future__ import annotations

import getpass
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

from sweeper.launch.base import LaunchError
from sweeper.launch.hosts.hadoop_conf import HadoopConf
from sweeper.launch.hosts.yarn_client import hadoop_java

FS_SHELL = "org.apache.hadoop.fs.FsShell"
STAGED: dict[tuple[str, str], str] = {}  # (fs.defaultFS, pyspark version) -> spark.yarn.jars, in this process


def jars_directory(conf: HadoopConf, version: str) -> str:
    """Where the jars of this pyspark version go on the cluster's file system (the Hadoop user's home)."""
    user = os.environ.get("HADOOP_USER_NAME") or getpass.getuser()
    return f"{conf.default_fs.rstrip('/')}/user/{user}/.sweeper/spark-jars-{version}"


def _fs(conf: HadoopConf, lib: Path, *arguments: str, timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
    command = [*hadoop_java(conf, lib, FS_SHELL, heap_mib=256), *arguments]
    try:
        return subprocess.run(
            command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired as error:
        raise LaunchError(f"hadoop fs {arguments[0]}: no end within {timeout_s:.0f} s") from error


def staged_spark_jars(conf: HadoopConf, lib: Path) -> str:
    """``spark.yarn.jars`` for pyspark's jars on the cluster's file system, uploading them if they are not there."""
    import pyspark

    key = (conf.default_fs, pyspark.__version__)
    if key in STAGED:
        return STAGED[key]
    directory = jars_directory(conf, pyspark.__version__)
    if _fs(conf, lib, "-test", "-d", directory).returncode != 0:
        started = time.monotonic()
        jars = sorted(str(jar) for jar in (Path(pyspark.__file__).parent / "jars").glob("*.jar"))
        if not jars:
            raise LaunchError(f"no jars in {Path(pyspark.__file__).parent / 'jars'}: is pyspark complete?")
        partial = f"{directory}.partial-{uuid.uuid4().hex[:8]}"
        for step in (("-mkdir", "-p", partial), ("-put", *jars, partial), ("-mv", partial, directory)):
            done = _fs(conf, lib, *step)
            if done.returncode != 0:
                _fs(conf, lib, "-rm", "-r", "-f", "-skipTrash", partial)
                if step[0] == "-mv" and _fs(conf, lib, "-test", "-d", directory).returncode == 0:
                    break  # another sweep staged them meanwhile
                raise LaunchError(f"could not stage Spark's jars in {directory}: {done.stderr.strip()[-800:]}")
        size_mib = sum(Path(jar).stat().st_size for jar in jars) / 2**20
        # into the launch's log (its standard error): a one-time cost, counted in this launch's cluster_start_s
        print(
            f"sweeper: staged {len(jars)} Spark jars ({size_mib:.0f} MiB) in {directory} in "
            f"{time.monotonic() - started:.1f} s (once; later applications reuse them)",
            file=sys.stderr,
            flush=True,
        )
    STAGED[key] = f"{directory}/*.jar"
    return STAGED[key]

"""pyspark's jars on the cluster's file system as one archive, uploaded once and reused by every Spark application.

With ``cluster.python_archive`` on a cluster with its own file system (``fs.defaultFS`` hdfs:// ...), the
nodes have no pyspark: left alone, Spark uploads its ~460 MB of jars into every application's staging
directory, and every NodeManager localizes them again for each application. Instead they are put once, as
one uncompressed zip (the jars are compressed already), under
``<fs.defaultFS>/user/<user>/.sweeper/spark-jars-<pyspark version>/`` (sweeper/launch/hosts/staging.py) and
``spark.yarn.archive`` points there: Spark uploads nothing, and the NodeManagers keep the archive in their
public cache across applications. One file, not ~280: HDFS completes each file it writes in a few hundred
milliseconds, so the jars one by one take minutes to stage and every NodeManager localizes them one by one.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from sweeper.launch.base import LaunchError
from sweeper.launch.hosts.hadoop_conf import HadoopConf
from sweeper.launch.hosts.staging import stage_once

ARCHIVE_NAME = "spark-jars.zip"


def pyspark_jars() -> list[Path]:
    """The jars of this pyspark."""
    import pyspark

    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))
    if not jars:
        raise LaunchError(f"no jars in {Path(pyspark.__file__).parent / 'jars'}: is pyspark complete?")
    return jars


def jars_archive(out: Path) -> Path:
    """pyspark's jars in one zip at ``out``, at its root (what ``spark.yarn.archive`` expects), stored as they are."""
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as archive:
        for jar in pyspark_jars():
            archive.write(jar, jar.name)
    return out


def staged_spark_jars(conf: HadoopConf, lib: Path) -> tuple[str, float]:
    """``spark.yarn.archive`` on the cluster's file system, and the seconds spent staging it here."""
    import pyspark

    directory, staged_s = stage_once(
        conf, lib, f"spark-jars-{pyspark.__version__}", lambda scratch: [jars_archive(scratch / ARCHIVE_NAME)]
    )
    return f"{directory}/{ARCHIVE_NAME}", staged_s

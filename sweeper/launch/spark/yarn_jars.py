"""pyspark's jars on the cluster's file system, uploaded once and reused by every Spark application on YARN.

With ``cluster.python_archive`` on a cluster with its own file system (``fs.defaultFS`` hdfs:// ...), the
nodes have no pyspark: left alone, Spark uploads its ~460 MB of jars into every application's staging
directory, and every NodeManager localizes them again for each application. Instead they are put once under
``<fs.defaultFS>/user/<user>/.sweeper/spark-jars-<pyspark version>/`` (sweeper/launch/hosts/staging.py) and
``spark.yarn.jars`` points there: Spark uploads nothing, and the NodeManagers keep the jars in their public
cache across applications.
"""

from __future__ import annotations

from pathlib import Path

from sweeper.launch.base import LaunchError
from sweeper.launch.hosts.hadoop_conf import HadoopConf
from sweeper.launch.hosts.staging import stage_once


def staged_spark_jars(conf: HadoopConf, lib: Path) -> tuple[str, float]:
    """``spark.yarn.jars`` for pyspark's jars on the cluster's file system, and the seconds spent uploading them."""
    import pyspark

    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))
    if not jars:
        raise LaunchError(f"no jars in {Path(pyspark.__file__).parent / 'jars'}: is pyspark complete?")
    directory, staged_s = stage_once(conf, lib, f"spark-jars-{pyspark.__version__}", jars)
    return f"{directory}/*.jar", staged_s

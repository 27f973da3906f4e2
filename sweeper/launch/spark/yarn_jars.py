"""pyspark's jars on the cluster's file system as one archive, uploaded once and reused by every Spark application.

With ``cluster.python_archive`` on a cluster with its own file system (``fs.defaultFS`` hdfs:// ...), the
nodes have no pyspark: left alone, Spark uploads its ~460 MB of jars into every application's staging
directory, and every NodeManager localizes them again for each application. Instead they are put once, as
one uncompressed zip (the jars are compressed already), under
``<fs.defaultFS>/user/<user>/.sweeper/spark-jars-<pyspark version>-<hash of the jars' names and sizes>/``
(sweeper/launch/hosts/staging.py: world-readable, so a public YARN resource) and ``spark.yarn.archive`` points
there: Spark uploads nothing, and every NodeManager unpacks the archive once into its public cache, for every
later application. So are pyspark's zips of its Python code (``PYSPARK_ARCHIVES_PATH``), which Spark would
otherwise upload with every application. One file, not ~280: HDFS completes each file it writes in a few hundred
milliseconds, so the jars one by one take minutes to stage and every NodeManager localizes them one by one.
"""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

from sweeper.launch.base import LaunchError
from sweeper.launch.hosts.staging import Upload, content_hash, existing

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


def jars_upload() -> Upload:
    """pyspark's jars as one archive on the cluster: ``spark-jars-<version>-<hash>/spark-jars.zip``, the hash of the
    jars' names and sizes (another set of jars under the same version is another file), zipped only when missing."""
    import pyspark

    digest = hashlib.sha256()
    for jar in pyspark_jars():
        digest.update(f"{jar.name}\0{jar.stat().st_size}\n".encode())
    name = f"spark-jars-{pyspark.__version__}-{digest.hexdigest()[:12]}"
    return Upload(f"{name}/{ARCHIVE_NAME}", lambda scratch: jars_archive(scratch / ARCHIVE_NAME))


def python_libs_uploads() -> list[Upload]:
    """pyspark's own zips of its Python code (``pyspark/python/lib``: ``pyspark.zip``, py4j's source zip), which Spark
    ships with every Python application and puts on the executors' ``PYTHONPATH``, as files on the cluster:
    ``pyspark-python-<version>-<hash of their contents>/<zip>``. Named by ``PYSPARK_ARCHIVES_PATH``, Spark then
    uploads neither (it takes files on its own file system where they are) and YARN keeps one copy per node. None
    when this pyspark has no such zips (Spark then looks for them itself)."""
    import pyspark

    lib = Path(pyspark.__file__).parent / "python" / "lib"
    zips = sorted(lib.glob("*.zip"))
    if not any(z.name == "pyspark.zip" for z in zips) or not any(z.name.startswith("py4j") for z in zips):
        return []
    digest = hashlib.sha256("".join(f"{z.name}:{content_hash(z)}\n" for z in zips).encode()).hexdigest()[:12]
    return [Upload(f"pyspark-python-{pyspark.__version__}-{digest}/{z.name}", existing(z)) for z in zips]

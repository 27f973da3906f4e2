"""Spark's classes for the executors on YARN, archived here once and mapped by every executor (class-data sharing).

An executor JVM on YARN spends most of its start loading Spark's classes from the ~280 jars its container has in
``__spark_libs__`` (the staged jars archive, :mod:`sweeper.launch.spark.yarn_jars`): 2-2.5 s until its first log
line and ~2 s more until it registers, three of them on 2 cores. A static CDS archive of the classes Spark's
executors load (:data:`CLASS_LIST`, read off Spark 4.3's YARN executors; a name another Spark lacks is skipped), made
here with the jars at the relative paths a container has them, is staged beside the jars (public: each node
localizes it once) and mapped by every executor (``-XX:SharedArchiveFile``), whose class path then begins with those
relative paths (``spark.executor.extraClassPath``): Java 17 matches an archive's class path entry by entry, also
through the container's links to the node's cache. Measured on the namespaced cluster (BENCHMARKS.md): a later
start 6.7 -> 4.8 s.

A JVM maps an archive made by its own Java build only, and one given an archive it cannot map starts with none at
all, not even the JDK's: the archive is made only where the grid's ``cluster.java_home`` is also on this machine (an
edge provisioned like its nodes), by that Java. The jars' modification times are those YARN gives them when it
unpacks the staged zip (even seconds: a zip's). ``-Xshare:off`` in the grid's executor Java options, or a class path
of its own (``spark.executor.extraClassPath``), turns it off.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from sweeper.launch.base import LaunchError
from sweeper.launch.hosts.staging import Upload
from sweeper.launch.spark.class_archive import QUIET

CLASS_LIST = Path(__file__).with_name("executor_classes.txt.gz")
STAGED_NAME = "executors.jsa"  # the archive's file on the cluster, and so in each node's cache
ARCHIVE_LINK = "sweeper-executor-classes.jsa"  # the executors' name for the localized archive (their directory)
LIBS = "__spark_libs__"  # where Spark's YARN client has a container find the jars of spark.yarn.archive
FORMAT = "1"  # what the archive is made of, beyond its inputs: a new one when this module's way of making it changes
DUMP_LIMIT_S = 600
# Spark 4 starts its executors with it: an archive is made with the module options its JVMs run with
SPARK_MODULES = "--add-modules=jdk.incubator.vector"


def wanted(java_home: str | None, spark_conf: Mapping[str, str]) -> Path | None:
    """The Java to make the executors' archive with: the grid's ``cluster.java_home`` when this machine has it (its
    ``release`` file, as a JDK has); None without one, or when the grid turns class-data sharing off or sets the
    executors' class path."""
    if not java_home or "spark.executor.extraClassPath" in spark_conf:
        return None
    if "-Xshare:off" in spark_conf.get("spark.executor.extraJavaOptions", "").split():
        return None
    home = Path(java_home)
    return home if (home / "release").is_file() and os.access(home / "bin" / "java", os.X_OK) else None


def unpacked_mtime(jar: Path) -> int:
    """The modification time a jar has on a node once YARN unpacked it from the staged zip: a zip keeps even seconds
    (of local time: a node in another time zone has other times, and its executors no archive).

    >>> import tempfile; f = Path(tempfile.mkdtemp()) / "a.jar"; _ = f.write_bytes(b""); os.utime(f, (7.9, 7.9))
    >>> unpacked_mtime(f)
    6
    """
    return int(jar.stat().st_mtime) // 2 * 2


def executor_archive_upload(java_home: Path, jars: Sequence[Path], spark_version: str) -> Upload:
    """The archive on the cluster as ``spark-executor-classes-<version>-<hash>/executors.jsa``, the hash of the
    Java (its ``release``), the jars (names, sizes, times as unpacked) and the class list; made only when missing."""
    digest = hashlib.sha256(f"{FORMAT}\0{(java_home / 'release').read_text()}\0".encode())
    digest.update(CLASS_LIST.read_bytes())
    for jar in jars:
        digest.update(f"{jar.name}\0{jar.stat().st_size}\0{unpacked_mtime(jar)}\n".encode())
    name = f"spark-executor-classes-{spark_version}-{digest.hexdigest()[:12]}"
    return Upload(f"{name}/{STAGED_NAME}", lambda scratch: make_archive(scratch, java_home, jars))


def class_path(jars: Sequence[Path]) -> str:
    """The executors' leading class path: each jar where its container has it, relative to the container."""
    return ":".join(f"{LIBS}/{jar.name}" for jar in jars)


def make_archive(scratch: Path, java_home: Path, jars: Sequence[Path]) -> Path:
    """Dump the archive into ``scratch`` with ``java_home``'s Java, from copies of the jars laid out and timed as a
    container has them (removed afterwards); a Java that cannot make it fails the launch, saying so."""
    work = scratch / "executor-classes"
    try:
        classes = _lay_out(work, jars)
        archive = scratch / STAGED_NAME
        command = [
            str(java_home / "bin" / "java"), "-Xshare:dump", f"-XX:SharedClassListFile={classes}",
            f"-XX:SharedArchiveFile={archive}", SPARK_MODULES, "-cp", class_path(jars),
        ]  # fmt: skip
        try:
            done = subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=DUMP_LIMIT_S)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise LaunchError(
                f"could not archive Spark's classes for the executors with {java_home}: {error}"
            ) from None
        if done.returncode != 0 or not archive.is_file():
            said = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise LaunchError(
                f"could not archive Spark's classes for the executors with {java_home} (exit {done.returncode}: "
                f"{' / '.join(said)}); a grid turns it off with spark_conf spark.executor.extraJavaOptions: -Xshare:off"
            )
        return archive
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _lay_out(work: Path, jars: Sequence[Path]) -> Path:
    """Copies of the jars under ``work/__spark_libs__``, timed as unpacked on a node, and the class list beside them."""
    libs = work / LIBS
    try:
        libs.mkdir(parents=True, exist_ok=True)
        for jar in jars:
            copy, mtime = libs / jar.name, unpacked_mtime(jar)
            shutil.copyfile(jar, copy)
            os.utime(copy, (mtime, mtime))
        classes = work / "classes.txt"
        classes.write_bytes(gzip.decompress(CLASS_LIST.read_bytes()))
    except OSError as error:  # a full scratch disk: ~460 MB of copies for the moment of the dump
        raise LaunchError(f"could not lay out Spark's jars to archive the executors' classes: {error}") from None
    return classes


def executor_conf(staged_uri: str, jars: Sequence[Path]) -> dict[str, str]:
    """What maps the staged archive in every executor: the file (localized beside the container's own), the option
    naming it, and the class path beginning with the jars it was made with."""
    return {
        "spark.yarn.dist.files": f"{staged_uri}#{ARCHIVE_LINK}",
        "spark.executor.extraJavaOptions": f"-XX:SharedArchiveFile={ARCHIVE_LINK} {QUIET}",
        "spark.executor.extraClassPath": class_path(jars),
    }

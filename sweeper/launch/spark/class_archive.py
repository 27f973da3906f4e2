"""Spark's classes archived once per Java and Spark (class-data sharing), mapped by every later launch's driver.

A JVM's start is mostly reading, parsing and verifying classes: Spark's driver loads ~10,000 from its jars. The first
launch's driver writes the classes it loaded into a dynamic CDS archive when it exits (``-XX:ArchiveClassesAtExit``,
a few seconds at its end); every later launch's driver JVM, and on ``local`` its executor JVMs, map that archive
(``-XX:SharedArchiveFile``) instead (on ``yarn`` the driver only: the executors get their own,
:mod:`sweeper.launch.spark.executor_classes`). Measured
on 2 busy cores: a 2-executor ``local-cluster`` session up in 5.5-5.6 s instead of 11.1-11.4 s (BENCHMARKS.md has
the quiet start). The JVMs run the same code with the same options; only their classes come from the archive.

It is kept in ``~/.cache/sweeper/spark-classes/<key>/spark.jsa`` (``$XDG_CACHE_HOME`` if set; ~120 MiB), the key
covering the Java runtime and Spark's jars, so another Java or Spark writes its own; writing one removes all but the
:data:`KEPT_ARCHIVES` most recently used. A JVM that cannot use an archive
starts as it would without one (``-Xshare:auto``), and CDS's own messages are off. A directory on an archived class
path must be empty: the launch's ``SPARK_CONF_DIR`` is the key's empty ``conf`` directory (the quiet log settings
reach the driver in ``SPARK_SUBMIT_OPTS``); one after Spark's jars (a YARN driver's ``HADOOP_CONF_DIR``) may
hold files, as a JVM may map an archive whose class path begins its own. A grid's ``spark_conf`` turns it off
with ``-Xshare:off``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import psutil

from sweeper.launch.hosts.packed_cache import sweeper_cache
from sweeper.launch.hosts.yarn_client import java

# Java 13 brought dynamic archives; Spark 4 needs 17: an older Java is not given the options it would refuse.
MIN_JAVA_MAJOR = 17
QUIET = "-Xlog:cds*=off"
ARCHIVE_NAME = "spark.jsa"
KEPT_ARCHIVES = 3  # the one written and the most recently used of other Javas and Sparks (venvs, upgrades)


@dataclass(frozen=True)
class ClassArchive:
    """The archive of one Java and one Spark, and the empty class-path directory its launches share."""

    directory: Path

    @property
    def path(self) -> Path:
        return self.directory / ARCHIVE_NAME

    @property
    def conf_dir(self) -> Path:
        """``SPARK_CONF_DIR`` of the launches: empty, as CDS needs every directory on the class path."""
        return self.directory / "conf"

    @property
    def pending(self) -> Path:
        """Where this process's driver writes the archive at its exit, before :meth:`keep` names it."""
        return self.directory / f"{ARCHIVE_NAME}.{os.getpid()}.part"

    def prepare(self) -> None:
        """The directories made, this key marked used now; archives half-written by processes that are gone, removed."""
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        os.utime(self.directory)
        for part in self.directory.glob(f"{ARCHIVE_NAME}.*.part"):
            pid = part.name.split(".")[-2]
            if not pid.isdigit() or not psutil.pid_exists(int(pid)):
                part.unlink(missing_ok=True)

    def java_options(self, writing: bool) -> tuple[str, str]:
        """The driver's and the executors' options: write the archive at the driver's exit (the executors start
        as before), or map it (the executors' class path is the driver's: they map the driver's archive)."""
        if writing:
            return f"-XX:ArchiveClassesAtExit={self.pending} {QUIET}", ""
        mapped = f"-XX:SharedArchiveFile={self.path} {QUIET}"
        return mapped, mapped

    def keep(self, driver_exit_code: int | None) -> None:
        """Name the archive the driver wrote when it exited cleanly; drop a part written by a killed driver."""
        if driver_exit_code == 0 and self.pending.exists():
            os.replace(self.pending, self.path)
            _prune(self.directory)
        self.pending.unlink(missing_ok=True)


def _prune(keep: Path) -> None:
    """Remove the archives of other keys but the :data:`KEPT_ARCHIVES` most recently used (a JVM mapping one keeps
    its mapping; a launch about to start with it starts without, as from a cache that was cleared)."""
    others = [d for d in keep.parent.iterdir() if d != keep and (d / ARCHIVE_NAME).is_file()]
    for old in sorted(others, key=lambda d: d.stat().st_mtime, reverse=True)[KEPT_ARCHIVES - 1 :]:
        shutil.rmtree(old, ignore_errors=True)


def class_archive() -> ClassArchive | None:
    """The archive of the Java Spark starts here (``JAVA_HOME``, else ``java`` on ``PATH``) and pyspark's jars, its
    directories prepared; None when that Java's version is not known to be 17 or newer or the cache is not writable."""
    home = _java_home()
    release = _release(home) if home is not None else None
    if home is None or release is None or _java_major(release) < MIN_JAVA_MAJOR:
        return None
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    digest = hashlib.sha256(f"{home}\0{release}\0{pyspark.__version__}\0{jars}\n".encode())
    for entry in sorted(os.scandir(jars), key=lambda e: e.name):
        digest.update(f"{entry.name}\0{entry.stat().st_size}\0{entry.stat().st_mtime_ns}\n".encode())
    archive = ClassArchive(sweeper_cache() / "spark-classes" / digest.hexdigest()[:16])
    try:
        archive.prepare()
    except OSError:  # a cache that cannot be written: the launch starts without an archive
        return None
    return archive


def _java_home() -> Path | None:
    """The runtime of the ``java`` Spark starts (:func:`sweeper.launch.hosts.yarn_client.java`), None without one."""
    binary = Path(java())
    return binary.resolve().parent.parent if binary.is_absolute() else None


def _release(home: Path) -> str | None:
    """The runtime's ``release`` file (``JAVA_VERSION="17.0.15"``, ...), None when it has none."""
    try:
        return (home / "release").read_text()
    except OSError:
        return None


def _java_major(release: str) -> int:
    """17 for ``JAVA_VERSION="17.0.15"``, 8 for ``"1.8.0_392"``, 0 when the file does not say.

    >>> _java_major('IMPLEMENTOR="Debian"\\nJAVA_VERSION="17.0.15"\\n'), _java_major('JAVA_VERSION="1.8.0_392"')
    (17, 8)
    """
    for line in release.splitlines():
        if line.startswith("JAVA_VERSION="):
            parts = line.split("=", 1)[1].strip('"').split(".")
            major = parts[1] if parts[0] == "1" and len(parts) > 1 else parts[0]
            return int(major) if major.isdigit() else 0
    return 0

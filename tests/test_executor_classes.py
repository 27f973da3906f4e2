"""#38: the YARN executors' class archive (sweeper.launch.spark.executor_classes), made as a launch makes it and
mapped by a real JVM laid out as a YARN container has Spark's jars: unpacked from the staged zip, the container's
own directory (not empty) on the class path after them. ``-Xshare:on`` makes a JVM that cannot map it fail."""

from __future__ import annotations

import os
import subprocess
import time
import zipfile
from pathlib import Path

import pytest

from sweeper.launch.hosts.yarn_client import java
from sweeper.launch.spark.executor_classes import LIBS, SPARK_MODULES, class_path, make_archive, wanted
from sweeper.launch.spark.yarn_jars import jars_archive, pyspark_jars

MAIN = ["org.apache.spark.deploy.SparkSubmit", "--version"]  # a Spark main that needs no cluster


@pytest.fixture(scope="module")
def container(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The archive made here, and a container's directory with the jars as YARN unpacks the staged zip (each file's
    time from its zip entry, as Hadoop's FileUtil.unZip sets it)."""
    tmp = tmp_path_factory.mktemp("executor-classes")
    archive = make_archive(tmp / "scratch", java_home(), pyspark_jars())
    directory = tmp / "container_01"
    with zipfile.ZipFile(jars_archive(tmp / "spark-jars.zip")) as zipped:
        zipped.extractall(directory / LIBS)
        for entry in zipped.infolist():
            seconds = time.mktime((*entry.date_time, 0, 0, -1))
            os.utime(directory / LIBS / entry.filename, (seconds, seconds))
    (directory / "launch_container.sh").write_text("exec java\n")
    return archive, directory


def java_home() -> Path:
    return Path(java()).resolve().parent.parent


def run_mapped(archive: Path, directory: Path) -> subprocess.CompletedProcess[str]:
    """Spark's main in ``directory`` with the executors' class path (Spark's own entries after the sweeper's)."""
    class_path_ = f"{class_path(pyspark_jars())}:{directory}:{directory}/{LIBS}/*"
    command = [java(), "-Xshare:on", f"-XX:SharedArchiveFile={archive}", SPARK_MODULES, "-Xlog:class+load=info"]
    return subprocess.run([*command, "-cp", class_path_, *MAIN], cwd=directory, capture_output=True, text=True)


@pytest.mark.integration
def test_a_container_maps_the_archive_made_here(container: tuple[Path, Path]) -> None:
    archive, directory = container
    assert not (archive.parent / "executor-classes").exists()  # the jars' copies are gone
    done = run_mapped(archive, directory)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    shared = [line for line in done.stdout.splitlines() if "source: shared objects file" in line]
    assert sum("org.apache.spark." in line or " scala." in line for line in shared) > 100, shared[-20:]


@pytest.mark.integration
def test_a_jar_unpacked_with_another_time_is_refused(container: tuple[Path, Path]) -> None:
    """Why the archive is made from copies timed as YARN unpacks the zip: Java checks each jar's time and size."""
    archive, directory = container
    jar = next((directory / LIBS).glob("scala-library-*.jar"))
    before = jar.stat().st_mtime
    os.utime(jar, (before + 2, before + 2))
    try:
        done = run_mapped(archive, directory)
    finally:
        os.utime(jar, (before, before))
    assert done.returncode != 0, done.stdout[-2000:]


def test_wanted_only_with_the_nodes_java_here_and_not_turned_off(tmp_path: Path) -> None:
    home = java_home()
    assert wanted(str(home), {}) == home
    assert wanted(None, {}) is None
    assert wanted(str(tmp_path / "jdk-17"), {}) is None  # the nodes' Java is not on this machine
    assert wanted(str(home), {"spark.executor.extraJavaOptions": "-Dx=1 -Xshare:off"}) is None
    assert wanted(str(home), {"spark.executor.extraClassPath": "/opt/lib/*"}) is None

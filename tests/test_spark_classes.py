"""Spark's classes archived once (sweeper.launch.spark.class_archive): the first local launch writes, the next maps."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sweeper.launch.registry import starter
from sweeper.launch.spark.class_archive import ClassArchive, class_archive
from sweeper.launch.spark.session import driver_process, executor_processes
from tests.support import launches
from tests.support.leftovers import assert_no_launch_processes


def java_home(root: Path, version: str) -> Path:
    """A directory that looks like a Java runtime to the key (its ``release`` file); nothing runs it."""
    (root / "bin").mkdir(parents=True)
    (root / "release").write_text(f'IMPLEMENTOR="test"\nJAVA_VERSION="{version}"\n')
    return root


def test_the_archive_is_keyed_by_the_java_runtime_and_an_old_or_unknown_java_gets_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    keys = set()
    for name, version in (("a", "17.0.15"), ("b", "17.0.16"), ("c", "21.0.2")):
        monkeypatch.setenv("JAVA_HOME", str(java_home(tmp_path / name, version)))
        archive = class_archive()
        assert archive is not None and archive.directory.parent == tmp_path / "cache" / "sweeper" / "spark-classes"
        keys.add(archive.directory.name)
    assert len(keys) == 3
    for name, version in (("old", "11.0.13"), ("older", "1.8.0_392"), ("odd", "unknown")):
        monkeypatch.setenv("JAVA_HOME", str(java_home(tmp_path / name, version)))
        assert class_archive() is None, version
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-release"))
    assert class_archive() is None
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "a"))
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))  # a cache that cannot be made
    assert class_archive() is None


def test_a_part_left_by_a_dead_process_is_removed_and_only_a_clean_exit_names_the_archive(tmp_path: Path) -> None:
    archive = ClassArchive(tmp_path / "key")
    archive.directory.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    left = archive.directory / f"spark.jsa.{int(dead.stdout)}.part"
    alive = archive.directory / f"spark.jsa.{os.getppid()}.part"
    left.write_bytes(b"half"), alive.write_bytes(b"writing")
    archive.prepare()
    assert not left.exists() and alive.exists() and archive.conf_dir.is_dir() and not any(archive.conf_dir.iterdir())
    for exit_code in (None, 1, -9):
        archive.pending.write_bytes(b"from a killed driver")
        archive.keep(exit_code)
        assert not archive.pending.exists() and not archive.path.exists(), exit_code
    archive.pending.write_bytes(b"archive")
    archive.keep(0)
    assert archive.path.read_bytes() == b"archive" and not archive.pending.exists()


def test_writing_an_archive_keeps_only_the_most_recently_used_others(tmp_path: Path) -> None:
    """Another Java or Spark writes its own archive (~120 MiB): the cache keeps the newest uses, not every key."""
    olds = [ClassArchive(tmp_path / f"old-{age}") for age in range(5)]
    for age, old in enumerate(olds):
        old.prepare()
        old.path.write_bytes(b"archive")
        os.utime(old.directory, (1_000_000 - age, 1_000_000 - age))  # old-0 used most recently
    (tmp_path / "no-archive").mkdir()  # a key whose driver never wrote one: not counted, not removed
    olds[3].prepare()  # used again now
    new = ClassArchive(tmp_path / "new")
    new.prepare()
    new.pending.write_bytes(b"archive")
    new.keep(0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new", "no-archive", "old-0", "old-3"]


def test_writing_the_archive_is_asked_of_the_driver_alone_and_mapping_it_of_every_jvm(tmp_path: Path) -> None:
    archive = ClassArchive(tmp_path)
    driver, executors = archive.java_options(writing=True)
    assert f"-XX:ArchiveClassesAtExit={archive.pending}" in driver and executors == ""
    driver, executors = archive.java_options(writing=False)
    assert f"-XX:SharedArchiveFile={archive.path}" in driver and driver == executors


def mapped_archives(pid: int) -> set[str]:
    """The class archives a process has mapped (its /proc maps)."""
    return {line.split()[-1] for line in Path(f"/proc/{pid}/maps").read_text().splitlines() if line.endswith(".jsa")}


@pytest.mark.integration
def test_the_first_local_launch_writes_the_archive_and_the_next_launchs_jvms_map_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    archive = class_archive()
    assert archive is not None, "this machine's Java is 17 or newer"
    launch = launches.launch("spark", executors=2, executor_memory_mib=1024)
    for first in (True, False):
        context = launches.context(tmp_path / f"run-{first}", start_timeout_s=120)
        with starter("spark", "local")(launch, context) as session:
            driver = driver_process(session.spark)  # type: ignore[attr-defined]
            assert driver is not None
            jvms = [driver, *executor_processes(session.spark)]  # type: ignore[attr-defined]
            assert len(jvms) == 3
            maps = {jvm.pid: mapped_archives(jvm.pid) for jvm in jvms}
            options = " ".join(driver.cmdline())
        if first:
            assert "-XX:ArchiveClassesAtExit=" in options
            assert all(str(archive.path) not in mapped for mapped in maps.values()), maps
            assert archive.path.stat().st_size > 10 * 2**20, "written when the driver exited"
        else:
            assert all(str(archive.path) in mapped for mapped in maps.values()), maps
        assert not list(archive.directory.glob("*.part"))
        assert_no_launch_processes()

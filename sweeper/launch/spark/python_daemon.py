"""Spark's Python daemon (``spark.python.daemon.module``), importing pyspark compiled rather than from Spark's zips.

An executor starts its Python workers through ``python -m pyspark.daemon`` with pyspark's own zips of sources
(``pyspark.zip``, py4j's) first on ``PYTHONPATH``, on every manager (locally from ``SPARK_HOME``, on YARN the copies
it ships). Python compiles every module it imports from a zip again in each process and never caches the result:
``import pyspark.daemon, pyspark.worker`` took 0.55 s from the zips, 0.13 s from an installed pyspark (idle machine),
in the daemon of every executor and again in each worker it forks. Run as the daemon, this module drops a zip from
``sys.path`` where the same package at the same version is installed in this environment (this venv, the packed
one), then runs pyspark's daemon: its workers, forked from it, import the installed modules. Where this environment
has another version or none, the zips stay, as Spark set them. Only the standard library is imported before that.
"""

from __future__ import annotations

import sys
import zipfile
from collections.abc import Sequence
from importlib.machinery import PathFinder
from pathlib import Path

PACKAGES = ("pyspark", "py4j")  # each has a version.py, in Spark's zips as in an installed copy


def _zipped_versions(entry: str) -> dict[str, bytes]:
    """``package -> its version.py`` for the :data:`PACKAGES` in the zip ``entry`` of ``sys.path`` (none: not a zip)."""
    try:
        with zipfile.ZipFile(entry) as archive:
            names = set(archive.namelist())
            return {p: archive.read(f"{p}/version.py") for p in PACKAGES if f"{p}/version.py" in names}
    except (OSError, zipfile.BadZipFile):
        return {}


def _installed_version(package: str, path: Sequence[str]) -> bytes | None:
    """``package/version.py`` of the copy found on ``path`` (no zip in it), without importing it."""
    spec = PathFinder.find_spec(package, list(path))
    if spec is None or not spec.submodule_search_locations:
        return None
    try:
        return (Path(next(iter(spec.submodule_search_locations))) / "version.py").read_bytes()
    except OSError:
        return None


def without_shadowing_zips(path: Sequence[str]) -> list[str]:
    """``path`` without the zips of :data:`PACKAGES` whose version the rest of ``path`` has installed."""
    zipped = {}  # entry -> (package, its version.py)
    for entry in path:
        for package, version in _zipped_versions(entry).items():
            zipped[entry] = (package, version)
    rest = [entry for entry in path if entry not in zipped]
    same = {entry for entry, (package, version) in zipped.items() if version == _installed_version(package, rest)}
    return [entry for entry in path if entry not in same]


if __name__ == "__main__":
    sys.path[:] = without_shadowing_zips(sys.path)
    from pyspark.daemon import manager

    manager()

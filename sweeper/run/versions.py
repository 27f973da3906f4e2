"""Versions recorded in every row: the interpreter, the libraries (each engine's as its descriptor names it) and
the JVM Spark uses."""

from __future__ import annotations

import functools
import os
import platform
import re
import subprocess
from importlib import metadata
from pathlib import Path
from typing import cast

from sweeper.engines import VERSION_PACKAGES
from sweeper.store.row import VersionColumns


def java_version() -> str:
    """``java -version`` of the JVM Spark will use (``JAVA_HOME`` first, then ``PATH``)."""
    java = Path(os.environ["JAVA_HOME"]) / "bin" / "java" if "JAVA_HOME" in os.environ else Path("java")
    try:
        output = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    match = re.search(r'version "([^"]+)"', output)
    return match.group(1) if match else "unknown"


@functools.cache
def versions() -> VersionColumns:
    """The versions every row records, e.g. ``python_version`` 3.11.7, ``ray_version`` 2.60.0 (each engine's
    library: :data:`sweeper.engines.VERSION_PACKAGES`), ``java_version`` 17.0.15."""
    found = {
        "python_version": platform.python_version(),
        "sklearn_version": _version("scikit-learn"),
        "joblib_version": _version("joblib"),
        **{column: _version(package) for column, package in VERSION_PACKAGES.items()},
        "java_version": java_version(),
    }
    missing = set(VersionColumns.__annotations__) ^ set(found)
    if missing:  # a descriptor's version column the row does not declare, or a declared one no descriptor fills
        raise RuntimeError(f"engine version columns differ from the row's VersionColumns: {sorted(missing)}")
    return cast(VersionColumns, found)


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"

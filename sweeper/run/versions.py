"""Versions recorded in every row: the interpreter, the libraries and the JVM Spark uses."""

from __future__ import annotations

import functools
import os
import platform
import re
import subprocess
from importlib import metadata
from pathlib import Path

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
    """The versions every row records, e.g. ``python_version`` 3.11.7, ``java_version`` 17.0.15."""
    return VersionColumns(
        python_version=platform.python_version(),
        sklearn_version=_version("scikit-learn"),
        joblib_version=_version("joblib"),
        dask_version=_version("dask"),
        pyspark_version=_version("pyspark"),
        java_version=java_version(),
    )


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"

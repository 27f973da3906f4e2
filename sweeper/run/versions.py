"""Versions recorded in every row: the interpreter, the libraries and the JVM Spark uses."""

from __future__ import annotations

import functools
import os
import platform
import re
import subprocess
from importlib import metadata
from pathlib import Path

LIBRARIES = {"sklearn": "scikit-learn", "joblib": "joblib", "dask": "dask", "pyspark": "pyspark"}


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
def versions() -> dict[str, str]:
    """Column name -> version, e.g. ``{"python_version": "3.11.7", "java_version": "17.0.15", ...}``."""
    found = {"python_version": platform.python_version(), "java_version": java_version()}
    for column, package in LIBRARIES.items():
        try:
            found[f"{column}_version"] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[f"{column}_version"] = "not installed"
    return found

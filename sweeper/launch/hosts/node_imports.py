"""The compiled modules a packed environment carries: those the processes on a node import.

YARN unpacks the environment into its NodeManager's cache; where a container's user cannot write there (containers
that do not run as the NodeManager's user), Python compiles a module shipped without its ``.pyc`` again in every
process that imports it: a Dask worker, a Spark executor's Python daemon and workers, each unpickling a fit that
imports scikit-learn. Every ``.pyc`` of the venv would add ~9,000 files to the archive, and a NodeManager without
Hadoop's native library sets each unpacked file's permissions with a ``chmod`` process of its own (~3 ms a file,
once per node); the modules those processes import, scikit-learn's estimators included (a grid may name any), are
~2,100.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

# What the processes on a node import, besides a fit's estimator: the probe's packages, the workers' entry points
# and the modules whose functions the engines send them (sweeper.launch.*.session, a data-parallel training)
CONTAINER_MODULES = (
    "sweeper.source", "sweeper.launch.spark.python_daemon", "pyspark.daemon", "pyspark.worker",
    "distributed.cli.dask_worker", "joblibspark", "sweeper.launch.spark.session", "sweeper.launch.dask.session",
    "sweeper.workload.averaging", "sweeper.workload.fit", "sweeper.workload.tasks",
)  # fmt: skip
REPORT_TIMEOUT_S = 300  # importing every module above and scikit-learn's estimators: ~5 s on 2 idle cores

# Run by the venv's own Python (argv: a scratch directory, then the modules): import what a node's processes
# import (a venv without a package skips it), then give each source module's .pyc: its own where that Python takes
# it as it is (its magic number, the source's mtime and size, or a hash-based .pyc), else one compiled to the scratch
# directory (a venv installed without .pyc files, or this process's PYTHONDONTWRITEBYTECODE).
_REPORT = """
import importlib, importlib.util, json, os, py_compile, sys
scratch, names = sys.argv[1], sys.argv[2:]
for name in names:
    try:
        importlib.import_module(name)
    except ImportError:
        pass
try:
    from sklearn.utils import all_estimators
    all_estimators()
except ImportError:
    pass

def valid(source, cached):
    try:
        with open(cached, "rb") as pyc:
            header = pyc.read(16)
        stat = os.stat(source)
    except OSError:
        return False
    if header[:4] != importlib.util.MAGIC_NUMBER:
        return False
    if int.from_bytes(header[4:8], "little") & 1:
        return True
    return header[8:16] == ((int(stat.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
                            + (stat.st_size & 0xFFFFFFFF).to_bytes(4, "little"))

pairs = {}
for module in list(sys.modules.values()):
    source = getattr(module, "__file__", None)
    if not source or not source.endswith(".py") or not os.path.isfile(source):
        continue
    source = os.path.realpath(source)
    if source in pairs:
        continue
    cached = importlib.util.cache_from_source(source)
    name = os.path.basename(cached)
    if not valid(source, cached):
        cached = os.path.join(scratch, f"{len(pairs)}.pyc")
        try:
            py_compile.compile(source, cfile=cached, doraise=True,
                               invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
        except py_compile.PyCompileError:
            continue
    pairs[source] = [cached, name]
print(json.dumps(pairs))
"""


@dataclass(frozen=True)
class Compiled:
    """A source module's ``.pyc``: the file to pack and its name in ``__pycache__``."""

    path: Path
    name: str


def compiled_imports(python: Path, sweeper_source: Path, scratch: Path) -> dict[str, Compiled]:
    """{real path of a source file: its ``.pyc``} for every module ``python`` imports as a node's processes do, with
    ``sweeper_source`` (the package pack ships) importable; the ``.pyc`` files the venv lacks are compiled into
    ``scratch``. Empty if that Python cannot tell (a warning: the archive still works, its processes compile what
    they import)."""
    env = {**os.environ, "PYTHONPATH": str(sweeper_source.parent), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [str(python), "-c", _REPORT, str(scratch), *CONTAINER_MODULES],
        capture_output=True, text=True, check=False, env=env, timeout=REPORT_TIMEOUT_S,
    )  # fmt: skip
    lines = done.stdout.splitlines()
    if done.returncode != 0 or not lines:
        log.warning("%s could not list the modules it imports; packed without compiled modules: %s", python,
                    done.stderr.strip()[-500:])  # fmt: skip
        return {}
    return {source: Compiled(Path(path), name) for source, (path, name) in json.loads(lines[-1]).items()}

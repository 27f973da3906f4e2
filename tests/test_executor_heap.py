"""The heap probe a YARN launch's first tasks run: a Python worker unpickles it without the sweeper's heavy modules."""

from __future__ import annotations

import subprocess
import sys

import cloudpickle

from sweeper.launch.spark.executor_heap import own_executor_heap

# what a fit imports in the warm-up anyway, or no worker needs: none of it for reading a heap
HEAVY = (
    "numpy",
    "joblib",
    "pandas",
    "pyspark",
    "sklearn",
    "psutil",
    "pyarrow",
    "sweeper.planning",
    "sweeper.launch.base",
)


def test_a_worker_unpickles_the_probe_without_heavy_modules() -> None:
    shipped = cloudpickle.dumps(own_executor_heap)
    code = (
        "import pickle, sys\n"
        "probe = pickle.loads(sys.stdin.buffer.read())\n"
        "assert list(probe(iter([0]))) == []  # not in a Spark worker: no executor JVM to read\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], input=shipped, capture_output=True, check=True)
    loaded = done.stdout.decode().split()
    assert "sweeper.launch.spark.executor_heap" in loaded  # by reference: the module the worker imports
    assert [name for name in loaded if name.startswith(HEAVY)] == []

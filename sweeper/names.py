"""The names a grid and a store use, in one leaf module (no project imports).

Engines and cluster managers as the grid lists them, the baseline's engine, the status of a row,
the columns that name a configuration, and the environment variables the fits observe. Every
layer may import this module; it imports none of them.
"""

from __future__ import annotations

from enum import StrEnum

ENGINES = ("spark", "dask", "spark-mllib", "ray")  # the engines a grid lists, in this order
DEFAULT_ENGINES = ("spark", "dask")
ONE_MODEL_ENGINES = ("spark-mllib",)  # one model per measurement across the executors
BASELINE_ENGINE = "local"  # the engine of the baseline's rows: not an engine of the grid, nor of its rules
MANAGERS = ("local", "yarn", "ssh", "standalone")
SPARK_ENGINES = ("spark", "spark-mllib")  # executors are JVMs: a heap and a memory overhead apart


def on_spark(engine: object) -> bool:
    """Whether an engine's executors are Spark's (JVMs with Python workers), not Dask's or the baseline's.

    >>> on_spark("spark-mllib"), on_spark("dask"), on_spark(None)
    (True, False, False)
    """
    return isinstance(engine, str) and engine in SPARK_ENGINES


DATA_PARALLEL = "data-parallel"  # the mode that trains one model across the launch
REPLICAS, CV, SEARCH_MODE = "replicas", "cv", "search"
MODES = (REPLICAS, CV, SEARCH_MODE, DATA_PARALLEL)  # how one measurement's batch is made (config/modes.py)


class Status(StrEnum):
    """A row's status: measured; failed (its error in the row); past ``workload.timeout_s``; or a configuration
    successive halving did not promote, never measured there. A member equals its text (``OK == "ok"``)."""

    OK = "ok"
    FAILED = "failed"
    TIMEOUT = "timeout"
    PRUNED = "pruned"


OK, FAILED, TIMEOUT, PRUNED = Status.OK, Status.FAILED, Status.TIMEOUT, Status.PRUNED

TIME, COST = "time", "cost"
OBJECTIVES = (TIME, COST)  # what sweeper recommend minimises (the first unless --objective says otherwise)
ACCURACY_MARGIN = 0.005  # accuracy a recommended configuration may lose to the most accurate one

CONFIG = ("cores_per_executor", "executors", "executor_memory_gib")  # the columns that name a configuration

BLAS_THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)
# Set by some engines behind the user's back; removed unless the grid sets them.
UNSET_BY_DEFAULT = ("MALLOC_TRIM_THRESHOLD_",)
OBSERVED_VARIABLES = (*BLAS_THREAD_VARIABLES, *UNSET_BY_DEFAULT, "PYTHONHASHSEED")

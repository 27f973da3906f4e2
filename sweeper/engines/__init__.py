"""Engines: a registry keyed by the names grids use, each imported only when a sweep needs it.

One module per engine and cluster manager; each provides ``start(launch, context)``, a context
manager that yields a started :class:`~sweeper.engines.base.Session` and leaves nothing running.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from contextlib import AbstractContextManager

from sweeper.engines.base import LaunchContext, Session
from sweeper.errors import UserError
from sweeper.plan import Launch

Starter = Callable[[Launch, LaunchContext], AbstractContextManager[Session]]

# (engine, manager) -> (module with ``start``, the pip packages it needs)
ENGINES: dict[tuple[str, str], tuple[str, str]] = {
    ("local", "local"): ("sweeper.engines.baseline", "joblib"),
    ("dask", "local"): ("sweeper.engines.dask_engine", "dask[distributed]"),
    ("spark", "local"): ("sweeper.engines.spark_engine", "pyspark joblibspark"),
    ("dask", "ssh"): ("sweeper.engines.dask_ssh", "dask[distributed] asyncssh"),
    ("spark", "ssh"): ("sweeper.engines.spark_ssh", "pyspark joblibspark"),
    ("dask", "yarn"): ("sweeper.engines.dask_yarn", "dask[distributed]"),
    ("spark", "yarn"): ("sweeper.engines.spark_yarn", "pyspark joblibspark"),
    ("dask", "standalone"): ("sweeper.engines.dask_standalone", "dask[distributed]"),
    ("spark", "standalone"): ("sweeper.engines.spark_standalone", "pyspark joblibspark"),
    # Spark ML's own MLP on the same Spark launches: one model per measurement across the executors
    **{("spark-mllib", manager): ("sweeper.mllib", "pyspark") for manager in ("local", "ssh", "yarn", "standalone")},
}


def managers_of(engine: str) -> tuple[str, ...]:
    """The cluster managers an engine can launch on."""
    return tuple(manager for name, manager in ENGINES if name == engine)


def starter(engine: str, manager: str = "local") -> Starter:
    """The ``start`` context manager of an engine on a manager, imported lazily with an install hint."""
    engines = sorted({name for name, _ in ENGINES})
    if engine not in engines:
        raise UserError(f"Invalid engine: {engine!r}, expected one of {engines}")
    check_supported(engine, manager)
    module_name, package = ENGINES[(engine, manager)]
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise UserError(
            f"engine {engine!r} on {manager!r} needs {package}, which is not installed ({error}); "
            f"run `make setup` or `pip install {package}`"
        ) from error
    start: Starter = module.start
    return start


def check_supported(engine: str, manager: str) -> None:
    """Fail before any launch when an engine cannot run on a cluster manager."""
    if (engine, manager) not in ENGINES:
        raise UserError(
            f"engine {engine!r} cannot launch on manager {manager!r} yet (supported: "
            f"{', '.join(managers_of(engine))}); run the grid with --dry-run to check it on this machine"
        )

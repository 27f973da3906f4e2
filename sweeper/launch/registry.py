"""The (engine, manager) -> module registry (the names themselves are in :mod:`sweeper.names`).

Each launch module is imported only when a sweep needs it. One module per engine and cluster manager;
each provides ``start(launch, context)``, a context manager that yields a started
:class:`~sweeper.launch.base.Session` and leaves nothing running.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from sweeper.errors import UserError
from sweeper.names import BASELINE_ENGINE, MANAGERS

if TYPE_CHECKING:
    from sweeper.launch.base import LaunchContext, Session
    from sweeper.planning.plan import Launch

    Starter = Callable[[Launch, LaunchContext], AbstractContextManager[Session]]


# (engine, manager) -> (module with ``start``, the pip packages it needs)
LAUNCHERS: dict[tuple[str, str], tuple[str, str]] = {
    (BASELINE_ENGINE, "local"): ("sweeper.launch.baseline", "joblib"),
    ("dask", "local"): ("sweeper.launch.dask.local", "dask[distributed]"),
    ("spark", "local"): ("sweeper.launch.spark.local", "pyspark joblibspark"),
    ("dask", "ssh"): ("sweeper.launch.dask.ssh", "dask[distributed] asyncssh"),
    ("spark", "ssh"): ("sweeper.launch.spark.ssh", "pyspark joblibspark"),
    ("dask", "yarn"): ("sweeper.launch.dask.yarn", "dask[distributed]"),
    ("spark", "yarn"): ("sweeper.launch.spark.yarn", "pyspark joblibspark"),
    ("dask", "standalone"): ("sweeper.launch.dask.standalone", "dask[distributed]"),
    ("spark", "standalone"): ("sweeper.launch.spark.standalone", "pyspark joblibspark"),
    # Spark ML's own MLP on the same Spark launches: one model per measurement across the executors
    **{("spark-mllib", manager): ("sweeper.launch.spark.mllib", "pyspark") for manager in MANAGERS},
}


def managers_of(engine: str) -> tuple[str, ...]:
    """The cluster managers an engine can launch on."""
    return tuple(manager for name, manager in LAUNCHERS if name == engine)


def starter(engine: str, manager: str = "local") -> Starter:
    """The ``start`` context manager of an engine on a manager, imported lazily with an install hint."""
    engines = sorted({name for name, _ in LAUNCHERS})
    if engine not in engines:
        raise UserError(f"Invalid engine: {engine!r}, expected one of {engines}")
    check_supported(engine, manager)
    module_name, package = LAUNCHERS[(engine, manager)]
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
    if (engine, manager) not in LAUNCHERS:
        raise UserError(
            f"engine {engine!r} cannot launch on manager {manager!r} yet (supported: "
            f"{', '.join(managers_of(engine))}); run the grid with --dry-run to check it on this machine"
        )

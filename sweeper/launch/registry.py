"""The (engine, manager) -> backend registry (the names themselves are in :mod:`sweeper.names`).

Each launch module is imported only when a sweep needs it. One module per engine and cluster manager,
each with its :class:`~sweeper.launch.lifecycle.ManagerBackend`; :func:`starter` gives the context
manager that yields a started :class:`~sweeper.launch.base.Session` and leaves nothing running.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from functools import partial
from typing import TYPE_CHECKING, Any

from sweeper.errors import UserError
from sweeper.names import BASELINE_ENGINE, MANAGERS

if TYPE_CHECKING:
    from sweeper.launch.base import LaunchContext, Session
    from sweeper.planning.plan import Launch

    Starter = Callable[[Launch, LaunchContext], AbstractContextManager[Session]]


# (engine, manager) -> ("module:ManagerBackend subclass", or "module:start" for an engine on top of another;
# the pip packages it needs)
LAUNCHERS: dict[tuple[str, str], tuple[str, str]] = {
    (BASELINE_ENGINE, "local"): ("sweeper.launch.baseline:Baseline", "joblib"),
    ("dask", "local"): ("sweeper.launch.dask.local:LocalDask", "dask[distributed]"),
    ("spark", "local"): ("sweeper.launch.spark.local:LocalSpark", "pyspark joblibspark"),
    ("dask", "ssh"): ("sweeper.launch.dask.ssh:SshDask", "dask[distributed] asyncssh"),
    ("spark", "ssh"): ("sweeper.launch.spark.ssh:SshSpark", "pyspark joblibspark"),
    ("dask", "yarn"): ("sweeper.launch.dask.yarn:YarnDask", "dask[distributed]"),
    ("spark", "yarn"): ("sweeper.launch.spark.yarn:YarnSpark", "pyspark joblibspark"),
    ("dask", "standalone"): ("sweeper.launch.dask.standalone:StandaloneDask", "dask[distributed]"),
    ("spark", "standalone"): ("sweeper.launch.spark.standalone:StandaloneSpark", "pyspark joblibspark"),
    ("ray", "local"): ("sweeper.launch.ray.local:LocalRay", "'sweeper[ray]'"),
    ("ray", "ssh"): ("sweeper.launch.ray.ssh:SshRay", "'sweeper[ray]'"),
    ("ray", "standalone"): ("sweeper.launch.ray.standalone:StandaloneRay", "'sweeper[ray]'"),
    # Spark ML's own MLP on the same Spark launches: one model per measurement across the executors
    **{("spark-mllib", manager): ("sweeper.launch.spark.mllib:start", "pyspark") for manager in MANAGERS},
}


def _managers_of(engine: str) -> tuple[str, ...]:
    """The cluster managers an engine can launch on."""
    return tuple(manager for name, manager in LAUNCHERS if name == engine)


def starter(engine: str, manager: str = "local") -> Starter:
    """The ``start`` context manager of an engine on a manager, imported lazily with an install hint."""
    found = check_installed(engine, manager)
    if isinstance(found, type):  # a manager's backend: the shared lifecycle starts it
        from sweeper.launch.lifecycle import launched

        return partial(launched, found)
    start: Starter = found
    return start


def check_installed(engine: str, manager: str) -> Any:
    """Import an engine's module for a manager (its backend class or start function): a UserError naming the
    package to install when it is missing, so a sweep fails before anything starts, never as failed rows."""
    engines = sorted({name for name, _ in LAUNCHERS})
    if engine not in engines:
        raise UserError(f"Invalid engine: {engine!r}, expected one of {engines}")
    check_supported(engine, manager)
    target, package = LAUNCHERS[(engine, manager)]
    module_name, name = target.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise UserError(
            f"engine {engine!r} on {manager!r} needs {package}, which is not installed ({error}); "
            f"run `make setup` or `pip install {package}`"
        ) from error
    return getattr(module, name)


def check_supported(engine: str, manager: str) -> None:
    """Fail before any launch when an engine cannot run on a cluster manager."""
    if (engine, manager) not in LAUNCHERS:
        raise UserError(
            f"engine {engine!r} cannot launch on manager {manager!r} yet (supported: "
            f"{', '.join(_managers_of(engine))}); run the grid with --dry-run to check it on this machine"
        )

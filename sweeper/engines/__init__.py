"""Engines: a registry keyed by the names grids use, each imported only when a sweep needs it."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from contextlib import AbstractContextManager

from sweeper.engines.base import LaunchContext, Session
from sweeper.errors import UserError
from sweeper.plan import Launch

Starter = Callable[[Launch, LaunchContext], AbstractContextManager[Session]]

# engine name -> (module, function, the pip package that provides it)
ENGINES: dict[str, tuple[str, str, str]] = {
    "local": ("sweeper.engines.baseline", "start", "joblib"),
    "dask": ("sweeper.engines.dask_engine", "start", "dask[distributed]"),
    "spark": ("sweeper.engines.spark_engine", "start", "pyspark joblibspark"),
}
# engine -> managers it can launch on here
MANAGERS: dict[str, tuple[str, ...]] = {"local": ("local",), "dask": ("local",), "spark": ("local",)}


def starter(engine: str) -> Starter:
    """The ``start`` context manager of an engine, imported lazily with an install hint."""
    if engine not in ENGINES:
        raise UserError(f"Invalid engine: {engine!r}, expected one of {sorted(ENGINES)}")
    module_name, function, package = ENGINES[engine]
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise UserError(
            f"engine {engine!r} needs {package}, which is not installed ({error}); run `make setup` "
            f"or `pip install {package}`"
        ) from error
    start: Starter = getattr(module, function)
    return start


def check_supported(engine: str, manager: str) -> None:
    """Fail before any launch when an engine cannot run on a cluster manager yet."""
    if manager not in MANAGERS.get(engine, ()):
        raise UserError(
            f"engine {engine!r} cannot launch on manager {manager!r} yet (supported: "
            f"{', '.join(MANAGERS.get(engine, ()))}); run the grid with --dry-run to check it on this machine"
        )

"""sweeper: size executors, launch matched Spark and Dask clusters, time scikit-learn training."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["load_results"]


def __getattr__(name: str) -> Any:
    # imported lazily: Spark and Dask workers import sweeper without needing pandas
    if name == "load_results":
        from sweeper.store.parquet import load_results

        return load_results
    raise AttributeError(f"module 'sweeper' has no attribute {name!r}")

"""``sweeper compare STORE``: Spark vs Dask side by side in the terminal."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console


def add_parser(commands: Any) -> None:
    """Register ``compare`` on the CLI's subparsers (``commands`` from ``add_subparsers``)."""
    compare: argparse.ArgumentParser = commands.add_parser(
        "compare", help="print Spark vs Dask side by side for a sweep of a store"
    )
    compare.add_argument("store", help="store directory")
    compare.add_argument("--sweep", help="sweep name (required when the store holds several)")
    compare.set_defaults(func=main)


def main(args: argparse.Namespace, console: Console) -> int:
    """``sweeper compare STORE [--sweep NAME]``: Spark vs Dask side by side."""
    from sweeper.results import report
    from sweeper.store.parquet import load_sweep

    console.print(report.compare_table(load_sweep(args.store, args.sweep)))
    return 0

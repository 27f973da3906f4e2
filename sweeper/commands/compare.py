"""``sweeper compare STORE``: engine against engine (Spark vs Dask; each pair of engines) in the terminal;
``--against STORE2``: does the answer repeat in a second sweep of the grid?"""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console


def add_parser(commands: Any) -> None:
    """Register ``compare`` on the CLI's subparsers (``commands`` from ``add_subparsers``)."""
    compare: argparse.ArgumentParser = commands.add_parser(
        "compare", help="print Spark vs Dask (each pair of engines measured) side by side for a sweep of a store"
    )
    compare.add_argument("store", help="store directory")
    compare.add_argument("--sweep", help="sweep name (required when the store holds several)")
    compare.add_argument(
        "--against",
        metavar="STORE2",
        help="a store with a second sweep of the grid: say, point by point, whether the two answers agree",
    )
    compare.add_argument("--against-sweep", metavar="NAME", help="the second sweep's name (default: --sweep's)")
    compare.set_defaults(func=main)


def main(args: argparse.Namespace, console: Console) -> int:
    """``sweeper compare STORE [--sweep NAME] [--against STORE2 [--against-sweep NAME2]]``."""
    from sweeper.results import report
    from sweeper.store.parquet import load_sweep

    first = load_sweep(args.store, args.sweep)
    if args.against is None:
        for table in report.compare_tables(first):
            console.print(table)
        return 0
    from sweeper.results.recommend import recommend
    from sweeper.results.repeat import repetition
    from sweeper.results.report.terminal import repetition_table

    second = load_sweep(args.against, args.against_sweep or args.sweep)
    names = [f"{store} {frame['sweep'].iloc[0]}" for store, frame in ((args.store, first), (args.against, second))]
    found = recommend(first)
    repeated = repetition(found, recommend(second))
    console.print(repetition_table(repeated, names[0], names[1], work_axis=found.work_axis))
    return 0

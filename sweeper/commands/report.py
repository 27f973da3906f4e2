"""``sweeper report STORE --out DIR``: one sweep's report as HTML, Markdown and PNGs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

from sweeper.commands.flags import add_key_flag
from sweeper.config.sections import RECOMMEND
from sweeper.text import plain


def add_parser(commands: Any) -> None:
    """Register ``report`` on the CLI's subparsers (``commands`` from ``add_subparsers``)."""
    report: argparse.ArgumentParser = commands.add_parser(
        "report", help="write report.html, report.md and plots for a sweep of a store"
    )
    report.add_argument("store", help="store directory")
    report.add_argument("--sweep", help="sweep name (required when the store holds several)")
    report.add_argument("--out", required=True, help="output directory")
    add_key_flag(report, RECOMMEND, "cost_per_node_hour", "price of a node-hour, for cost per measurement")
    report.set_defaults(func=main)


def main(args: argparse.Namespace, console: Console) -> int:
    """``sweeper report STORE [--sweep NAME] --out DIR``."""
    from sweeper.results import report

    written = report.write_report(
        args.store, Path(args.out), sweep=args.sweep, cost_per_node_hour=args.cost_per_node_hour
    )
    for path in written:
        console.print(plain(path), soft_wrap=True)
    return 0

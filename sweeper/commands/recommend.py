"""``sweeper recommend STORE``: which engine and configuration to use, how sure that is, memory to right-size."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console

from sweeper.names import ACCURACY_MARGIN, OBJECTIVES


def add_parser(commands: Any) -> None:
    """Register ``recommend`` on the CLI's subparsers (``commands`` from ``add_subparsers``)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "recommend", help="say which engine and configuration to use, how sure that is, and how to right-size memory"
    )
    parser.add_argument("store", help="store directory")
    parser.add_argument("--sweep", help="sweep name (required when the store holds several)")
    parser.add_argument("--objective", choices=OBJECTIVES, default="time", help="what to minimise (default time)")
    parser.add_argument(
        "--accuracy-margin", type=float, default=ACCURACY_MARGIN,
        help=f"accuracy the choice may lose to the most accurate one (default {ACCURACY_MARGIN})",
    )  # fmt: skip
    parser.add_argument("--cost-per-node-hour", type=float, help="price of a node-hour (needed by --objective cost)")
    parser.add_argument("--budget", type=float, help="most a measurement may cost: the fastest configuration within it")
    parser.add_argument("--json", action="store_true", help="print one JSON object (keys in the README)")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace, console: Console) -> int:
    """``sweeper recommend STORE [--sweep NAME] [--objective time|cost] [--accuracy-margin M] [--json]``."""
    from sweeper.results.recommend import recommend
    from sweeper.results.recommend_view import COLUMNS, lines, to_json
    from sweeper.results.report.sections.measured import dry_run_banner
    from sweeper.store.parquet import load_sweep
    from sweeper.text import json_text, plain, wrapped

    df = load_sweep(args.store, args.sweep)
    recommendation = recommend(
        df,
        objective=args.objective,
        accuracy_margin=args.accuracy_margin,
        cost_per_node_hour=args.cost_per_node_hour,
        budget=args.budget,
    )
    if args.json:
        print(json_text(to_json(recommendation), indent=2))
    else:
        banner = dry_run_banner(df)
        for line in ([banner] if banner else []) + lines(recommendation):
            console.print(wrapped(plain(line), min(console.width, COLUMNS)), soft_wrap=True)
    return 0

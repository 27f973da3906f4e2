"""``sweeper recommend STORE``: which engine and configuration to use, how sure that is, memory to right-size."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console

from sweeper.commands.flags import add_key_flag
from sweeper.config.sections import RECOMMEND


def add_parser(commands: Any) -> None:
    """Register ``recommend`` on the CLI's subparsers (``commands`` from ``add_subparsers``)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "recommend", help="say which engine and configuration to use, how sure that is, and how to right-size memory"
    )
    parser.add_argument("store", help="store directory")
    parser.add_argument("--sweep", help="sweep name (required when the store holds several)")
    for name in RECOMMEND.keys:
        add_key_flag(parser, RECOMMEND, name)
    parser.add_argument("--json", action="store_true", help="print one JSON object (keys in the README)")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace, console: Console) -> int:
    """``sweeper recommend STORE [--sweep NAME] [--objective time|cost] [--accuracy-margin M] [--json]``."""
    from sweeper.results.dry_run import dry_run_banner
    from sweeper.results.predict.worth import worth_measuring
    from sweeper.results.recommend import recommend
    from sweeper.results.recommend_view import lines, to_json
    from sweeper.store.parquet import load_sweep
    from sweeper.text import json_text, say

    df = load_sweep(args.store, args.sweep)
    recommendation = recommend(
        df,
        objective=args.objective,
        accuracy_margin=args.accuracy_margin,
        cost_per_node_hour=args.cost_per_node_hour,
        budget=args.budget,
    )
    worth = worth_measuring(df)  # the what-if model's fit: only where it is shown
    if args.json:
        print(json_text(to_json(recommendation, worth), indent=2))
    else:
        banner = dry_run_banner(df)
        for line in ([banner] if banner else []) + lines(recommendation, worth):
            say(console, line)
    return 0

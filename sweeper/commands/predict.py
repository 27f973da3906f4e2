"""``sweeper predict STORE --grid OTHER.yaml``: another grid's batch times, predicted from a measured sweep."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.table import Table

from sweeper.errors import UserError


def add_parser(commands: Any) -> None:
    """Register ``predict`` on the CLI's subparsers (``commands`` from ``add_subparsers``)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "predict", help="predict another grid's batch times from a measured sweep, with the model's held-out error"
    )
    parser.add_argument("store", help="store directory")
    parser.add_argument("--sweep", help="sweep name (required when the store holds several)")
    parser.add_argument("--grid", help="grid whose launches and points to predict (other shapes, nodes, epochs)")
    parser.add_argument(
        "--validate", action="store_true", help="print only how well each measured configuration is predicted"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object (keys in the README)")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace, console: Console) -> int:
    """``sweeper predict STORE [--sweep NAME] (--grid GRID | --validate) [--json]``."""
    from sweeper.config import load as grid_file
    from sweeper.planning.plan import make_plan
    from sweeper.results.predict.forecast import learn, predicted_targets, unpredicted_engines
    from sweeper.results.predict.view import (
        model_lines,
        prediction_headers,
        prediction_rows,
        to_json,
        unpredicted_lines,
        validation_lines,
    )
    from sweeper.store.parquet import load_sweep
    from sweeper.text import OUTPUT_COLUMNS, json_text, plain, wrapped

    if args.grid is None and not args.validate:
        raise UserError("sweeper predict: pass --grid GRID (the launches to predict) or --validate")
    plan = make_plan(grid_file.load(args.grid)) if args.grid is not None else None  # a bad grid before any work
    learned = learn(load_sweep(args.store, args.sweep))
    targets = [] if plan is None or args.validate else predicted_targets(learned, plan)
    predictions = [learned.predict(shape) for _, _, shape in targets]
    skipped = unpredicted_lines(unpredicted_engines(learned, plan)) if plan is not None and not args.validate else []
    if args.json:
        print(json_text(to_json(learned, predictions), indent=2))
        return 0
    console.width = min(console.width, OUTPUT_COLUMNS)  # on a wider terminal too, the table as well
    shown = validation_lines(learned) if args.validate else [*model_lines(learned), *validation_lines(learned)]
    for line in [*shown, *skipped]:
        console.print(wrapped(plain(line), console.width), soft_wrap=True)
    if predictions:
        table = Table(title=plain(f"predicted median batch times of {args.grid}"))
        for header in prediction_headers(learned):
            table.add_column(header)
        for row in prediction_rows(predictions):
            table.add_row(*(plain(cell) for cell in row))
        console.print(table)
    return 0

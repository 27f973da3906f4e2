"""``sweeper plan GRID [--json] [--dry-run]``: the matched launches of a grid, nothing started."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rich.console import Console

from sweeper.config import load as grid_file
from sweeper.errors import UserError
from sweeper.planning.dry_run import shrink_plan
from sweeper.planning.plan import Plan, make_plan
from sweeper.planning.view import beyond_this_machine, plan_json, show_plan
from sweeper.text import visible


def add_parser(commands: Any) -> None:
    """Register ``plan`` on the CLI's subparsers (``commands`` from ``add_subparsers``)."""
    plan: argparse.ArgumentParser = commands.add_parser(
        "plan", help="show the matched launches of a grid without starting anything"
    )
    plan.add_argument("grid", help="grid file (YAML)")
    plan.add_argument("--json", action="store_true", help="print one JSON object per launch")
    plan.add_argument("--dry-run", action="store_true", help="show the shape each launch will have on this machine")
    plan.add_argument(
        "--predict-from", metavar="STORE", help="also predict each launch's batch times and the sweep's cluster time"
    )
    plan.add_argument("--sweep", help="the sweep of --predict-from's store to learn from (when it holds several)")
    plan.set_defaults(func=main)


def main(args: argparse.Namespace, console: Console) -> int:
    """``sweeper plan GRID [--json] [--dry-run]``."""
    if args.json and args.predict_from:  # stdout must stay one JSON document
        raise UserError(
            "sweeper plan: --predict-from prints its predictions as text, so not with --json; "
            "`sweeper predict STORE --grid GRID --json` prints them as JSON"
        )
    plan = make_plan(grid_file.load(args.grid))
    if args.dry_run:
        plan = shrink_plan(plan)
    if args.json:
        for warning in [*plan.grid.warnings, *beyond_this_machine(plan)]:  # stdout stays JSON
            print(f"warning: {visible(warning)}", file=sys.stderr)
        print(plan_json(plan))
    else:
        show_plan(plan, console)
    if args.predict_from:
        _show_predictions(plan, args.predict_from, args.sweep, console)
    return 0


def _show_predictions(plan: Plan, store: str, sweep: str | None, console: Console) -> None:
    """The what-if model of ``store``'s sweep on this plan: its validation, each launch's batches, the cost."""
    from rich.table import Table

    from sweeper.results.predict.forecast import learn, planned_cost, predicted_targets, unpredicted_engines
    from sweeper.results.predict.view import prediction_headers, prediction_rows, unpredicted_lines, validation_lines
    from sweeper.store.parquet import load_sweep
    from sweeper.text import plain, say

    rows = load_sweep(store, sweep)
    learned = learn(rows)
    predictions = [learned.predict(shape) for _, _, shape in predicted_targets(learned, plan)]
    say(console, f"Predicted from {store} (sweep {', '.join(sorted(map(str, rows['sweep'].unique())))}):")
    for line in [*validation_lines(learned), *unpredicted_lines(unpredicted_engines(learned, plan))]:
        say(console, f"  {line}")
    table = Table(title="predicted median batch times")
    for header in prediction_headers(learned):
        table.add_column(header)
    for row in prediction_rows(predictions):
        table.add_row(*(plain(cell) for cell in row))
    console.print(table)
    cost = planned_cost(learned, plan)
    say(
        console,
        f"Predicted cluster time: {cost.total_node_s:,.0f} node-seconds "
        f"({cost.total_node_s / 3600:.2f} node-hours), "
        f"{cost.batches_node_s / cost.total_node_s:.0%} of it in measured batches; starts, warm-ups and "
        "teardowns as the sweep measured them",
    )

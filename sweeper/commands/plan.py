"""``sweeper plan GRID [--json] [--dry-run]``: the matched launches of a grid, nothing started."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rich.console import Console

from sweeper.config import load as grid_file
from sweeper.planning.dry_run import shrink_plan
from sweeper.planning.plan import make_plan
from sweeper.planning.view import beyond_this_machine, plan_json, show_plan


def add_parser(commands: Any) -> None:
    """Register ``plan`` on the CLI's subparsers (``commands`` from ``add_subparsers``)."""
    plan: argparse.ArgumentParser = commands.add_parser(
        "plan", help="show the matched launches of a grid without starting anything"
    )
    plan.add_argument("grid", help="grid file (YAML)")
    plan.add_argument("--json", action="store_true", help="print one JSON object per launch")
    plan.add_argument("--dry-run", action="store_true", help="show the shape each launch will have on this machine")
    plan.set_defaults(func=main)


def main(args: argparse.Namespace, console: Console) -> int:
    """``sweeper plan GRID [--json] [--dry-run]``."""
    plan = make_plan(grid_file.load(args.grid))
    if args.dry_run:
        plan = shrink_plan(plan)
    if args.json:
        for warning in [*plan.grid.warnings, *beyond_this_machine(plan)]:  # stdout stays JSON
            print(f"warning: {warning}", file=sys.stderr)
        print(plan_json(plan))
    else:
        show_plan(plan, console)
    return 0

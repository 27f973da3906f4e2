"""The ``sweeper`` command line: argument set-up, then a plain function per command.

User errors (:class:`~sweeper.errors.UserError`) are caught here and only here: they print
a clear message and exit with code 2, without a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape

from sweeper import grid as grid_file
from sweeper.errors import UserError
from sweeper.plan import make_plan, plan_json
from sweeper.plan_view import show_plan

USER_ERROR_EXIT = 2


def cmd_plan(args: argparse.Namespace, console: Console) -> int:
    """``sweeper plan GRID [--json]``."""
    plan = make_plan(grid_file.load(args.grid))
    if args.json:
        print(plan_json(plan))
    else:
        show_plan(plan, console)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sweeper",
        description="Size executors, launch matched Spark and Dask clusters, and time scikit-learn training.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    plan = commands.add_parser("plan", help="show the matched launches of a grid without starting anything")
    plan.add_argument("grid", help="grid file (YAML)")
    plan.add_argument("--json", action="store_true", help="print one JSON object per launch")
    plan.set_defaults(func=cmd_plan)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sweeper`` console script."""
    args = build_parser().parse_args(argv)
    console = Console(stderr=False, highlight=False)
    errors = Console(stderr=True, highlight=False)
    try:
        code: int = args.func(args, console)
    except UserError as error:
        for problem in error.problems:
            errors.print(f"[red]error:[/] {escape(problem)}", soft_wrap=True)
        return USER_ERROR_EXIT
    return code


if __name__ == "__main__":
    sys.exit(main())

"""``sweeper check GRID``: preflight a grid's cluster; exit 0 when it is ready, 2 when not."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console

from sweeper.config import load as grid_file
from sweeper.errors import USER_ERROR_EXIT
from sweeper.planning.plan import make_plan
from sweeper.text import plain


def add_parser(commands: Any) -> None:
    """Register ``check`` on the CLI's subparsers (``commands`` from ``add_subparsers``)."""
    check: argparse.ArgumentParser = commands.add_parser(
        "check", help="preflight a grid's cluster: every node ready, nothing measured"
    )
    check.add_argument("grid", help="grid file (YAML)")
    check.add_argument("--json", action="store_true", help="print the checks as one JSON object")
    check.add_argument("--kill-orphans", action="store_true", help="kill running applications of earlier sweeps")
    check.set_defaults(func=main)


def main(args: argparse.Namespace, console: Console) -> int:
    """``sweeper check GRID [--json] [--kill-orphans]``: exit 0 when the cluster is ready, 2 when not."""
    from sweeper.preflight.run import preflight

    found = preflight(make_plan(grid_file.load(args.grid)), kill_orphans=args.kill_orphans)
    if args.json:
        print(found.as_json())
    else:
        for line in found.lines():
            console.print(plain(line), soft_wrap=True)
    return 0 if found.ok else USER_ERROR_EXIT

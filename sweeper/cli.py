"""The ``sweeper`` command line: argument set-up, then a plain function per command.

User errors (:class:`~sweeper.errors.UserError`) are caught here and only here: they print
a clear message and exit with code 2, without a traceback.

The consoles read no markup and no emoji codes, and user text goes through
:func:`~sweeper.run.view.plain`: paths, names and messages show as written (``[bold]``, ``[/]``,
``:smile:`` and terminal escape sequences included); styles come only from :class:`rich.text.Text`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from sweeper import __version__
from sweeper.config import load as grid_file
from sweeper.config.grid import Grid
from sweeper.errors import UserError
from sweeper.planning.dry_run import shrink_plan
from sweeper.planning.plan import Plan, make_plan, plan_json
from sweeper.planning.view import beyond_this_machine, show_plan, warning_line
from sweeper.results import PRUNED
from sweeper.results.recommend_view import add_parser as add_recommend_parser
from sweeper.run.signals import exit_status
from sweeper.run.view import plain
from sweeper.search.replay_view import add_parser as add_replay_parser
from sweeper.shapes import counted

USER_ERROR_EXIT = 2


def cmd_plan(args: argparse.Namespace, console: Console) -> int:
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


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    """``sweeper run GRID [--dry-run [--no-reuse]] [--fresh] [--store DIR]``."""
    from sweeper.run import runner
    from sweeper.run.view import measurement_line, progress_bar, summary_table

    plan = make_plan(grid_file.load(args.grid))
    grid = plan.grid
    for warning in grid.warnings if args.dry_run else [*grid.warnings, *beyond_this_machine(plan)]:
        console.print(warning_line(warning), soft_wrap=True)
    if args.dry_run:
        plan = shrink_plan(plan)
        grid = plan.grid  # its own sweep, NAME-dry-run
    elif grid.manager != "local" and not args.skip_check:
        _check_first(plan, console)
    store = Path(args.store) if args.store else grid.store
    kind = "dry run" if args.dry_run else "sweep"
    console.print(
        plain(f"{kind} ")
        + plain(grid.name, "bold")
        + plain(
            f": {counted(plan.n_measurements, 'measurement')} in {counted(len(plan.launches), 'launch', 'launches')}, "
            f"{counted(plan.n_fits, 'fit')} each, store {store}"
        )
    )
    with progress_bar(console, plan.n_measurements) as bar:

        def report(row: dict[str, object]) -> None:
            bar.console.print(measurement_line(row), soft_wrap=True)

        def advance(done: int, total: int) -> None:
            bar.update(bar.task_ids[0], completed=done, total=total)

        result = runner.run(
            plan,
            store=store,
            fresh=args.fresh,
            report=report,
            warn=lambda text: bar.console.print(warning_line(text), soft_wrap=True),
            progress=advance,
            reuse=not args.no_reuse,
        )
    if result.skipped:
        console.print(f"{result.skipped} measurements already in the store were skipped (--fresh starts over)")
    if result.rows:
        console.print(summary_table(result.rows))
        for note in result.notes:
            console.print(plain(f"Halving: {note}"), soft_wrap=True)
        _print_closing(store, grid, str(result.rows[0]["run_id"]), console)
    failed = sum(1 for row in result.rows if row["status"] not in ("ok", PRUNED))
    pruned = sum(1 for row in result.rows if row["status"] == PRUNED)
    console.print(
        plain(
            f"{counted(len(result.rows), 'row')} written to {store / grid.name}, {failed} not ok"
            + (f", {pruned} pruned (not promoted by halving)" if pruned else "")
        )
    )
    if result.interrupted:
        console.print(plain("interrupted", "red") + plain(": the running launch was torn down; finished rows are kept"))
        return result.exit_status
    return 0


def _print_closing(store: Path, grid: Grid, run_id: str, console: Console) -> None:
    """What ends a run: the cluster time it took, then the answer of ``sweeper recommend``."""
    from sweeper.results.recommend import recommend
    from sweeper.results.recommend_view import answer_lines, memory_sentence
    from sweeper.results.report.content import dry_run_banner
    from sweeper.results.store import load_results
    from sweeper.search.accounting import cluster_seconds, full_grid_estimate

    df = load_results(store, grid.name)
    spent = cluster_seconds(df[df["run_id"] == run_id])
    line = f"Cluster time: {spent.total_s:,.0f} node-seconds, {spent.measured_share:.0%} of it in measured batches"
    if grid.search.strategy == "halving":
        full = full_grid_estimate(df, grid.search.rung_axis)
        share = f" ({spent.total_s / full.total_s:.0%})" if full.total_s > 0 else ""
        line += f"; the full grid would have taken about {full.total_s:,.0f}{share}"
    banner = dry_run_banner(df)
    recommendation = recommend(df)
    memory = [f"  {memory_sentence(advice)}" for advice in recommendation.memory]
    if memory:
        memory.insert(0, "Memory (granted vs measured peak; suggested = peak + 25 %):")
    for text in [line, *([banner] if banner else []), *answer_lines(recommendation), *memory]:
        console.print(plain(text), soft_wrap=True)


def cmd_check(args: argparse.Namespace, console: Console) -> int:
    """``sweeper check GRID [--json] [--kill-orphans]``: exit 0 when the cluster is ready, 2 when not."""
    from sweeper.preflight.run import preflight

    found = preflight(make_plan(grid_file.load(args.grid)), kill_orphans=args.kill_orphans)
    if args.json:
        print(found.as_json())
    else:
        for line in found.lines():
            console.print(plain(line), soft_wrap=True)
    return 0 if found.ok else USER_ERROR_EXIT


def _check_first(plan: Plan, console: Console) -> None:
    """``sweeper run`` on a cluster: the preflight's problems stop it before anything starts."""
    from sweeper.launch.registry import check_supported
    from sweeper.preflight.run import preflight

    for launch in plan.launches:  # what the grid cannot run at all is named before the cluster is asked
        check_supported(launch.engine, launch.manager)
    console.print(plain(f"checking the {plan.grid.manager} cluster (sweeper check; --skip-check skips it)"))
    found = preflight(plan)
    if not found.ok:
        raise UserError([f"sweeper check: {c.check} on {c.node or 'the driver'}: {c.detail}" for c in found.problems()])


def cmd_report(args: argparse.Namespace, console: Console) -> int:
    """``sweeper report STORE [--sweep NAME] --out DIR``."""
    from sweeper.results import report

    written = report.write_report(
        args.store, Path(args.out), sweep=args.sweep, cost_per_node_hour=args.cost_per_node_hour
    )
    for path in written:
        console.print(plain(path), soft_wrap=True)
    return 0


def cmd_compare(args: argparse.Namespace, console: Console) -> int:
    """``sweeper compare STORE [--sweep NAME]``: Spark vs Dask side by side."""
    from sweeper.results import report

    console.print(report.compare_table(report.load_sweep(args.store, args.sweep)))
    return 0


def cmd_pack_env(args: argparse.Namespace, console: Console) -> int:
    """``sweeper pack-env OUT [--exclude PATTERN ...]``: this venv as an archive for ``cluster.python_archive``."""
    from sweeper.launch.hosts.pack_env import pack

    packed = pack(Path(args.out), exclude=args.exclude or (), compresslevel=args.level)
    console.print(
        plain(
            f"{packed.path}: {packed.files} files, {packed.size_mib:.0f} MiB in {packed.pack_s:.1f} s "
            f"(left out: {', '.join(packed.dropped)})"
        )
    )
    console.print(plain(f"use it in the grid: cluster.python_archive: {packed.path}"), soft_wrap=True)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sweeper",
        description="Size executors, launch matched Spark and Dask clusters, and time scikit-learn training.",
    )
    parser.add_argument("--version", action="version", version=f"sweeper {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    plan = commands.add_parser("plan", help="show the matched launches of a grid without starting anything")
    plan.add_argument("grid", help="grid file (YAML)")
    plan.add_argument("--json", action="store_true", help="print one JSON object per launch")
    plan.add_argument("--dry-run", action="store_true", help="show the shape each launch will have on this machine")
    plan.set_defaults(func=cmd_plan)
    run = commands.add_parser("run", help="run a sweep: every launch, measurement and trial of a grid")
    run.add_argument("grid", help="grid file (YAML)")
    run.add_argument("--dry-run", action="store_true", help="shrink every launch to fit this machine (rows marked)")
    run.add_argument(
        "--no-reuse", action="store_true",
        help="dry run: measure every planned measurement, even those whose shrunk form is the same",
    )  # fmt: skip
    run.add_argument("--fresh", action="store_true", help="delete this sweep's rows first instead of resuming")
    run.add_argument("--store", help="store directory (default: the grid's store)")
    run.add_argument("--skip-check", action="store_true", help="do not run sweeper check's preflight first")
    run.set_defaults(func=cmd_run)
    check = commands.add_parser("check", help="preflight a grid's cluster: every node ready, nothing measured")
    check.add_argument("grid", help="grid file (YAML)")
    check.add_argument("--json", action="store_true", help="print the checks as one JSON object")
    check.add_argument("--kill-orphans", action="store_true", help="kill running applications of earlier sweeps")
    check.set_defaults(func=cmd_check)
    report = commands.add_parser("report", help="write report.html, report.md and plots for a sweep of a store")
    report.add_argument("store", help="store directory")
    report.add_argument("--sweep", help="sweep name (required when the store holds several)")
    report.add_argument("--out", required=True, help="output directory")
    report.add_argument("--cost-per-node-hour", type=float, help="price of a node-hour, for cost per measurement")
    report.set_defaults(func=cmd_report)
    compare = commands.add_parser("compare", help="print Spark vs Dask side by side for a sweep of a store")
    compare.add_argument("store", help="store directory")
    compare.add_argument("--sweep", help="sweep name (required when the store holds several)")
    compare.set_defaults(func=cmd_compare)
    add_recommend_parser(commands)
    add_replay_parser(commands)
    pack_env = commands.add_parser(
        "pack-env", help="pack this virtualenv (with a real copy of sweeper) for cluster.python_archive on YARN"
    )
    pack_env.add_argument("out", help="archive to write: .tar.gz, .tgz or .tar")
    pack_env.add_argument(
        "--exclude", action="append", metavar="PATTERN",
        help="leave out site-packages entries matching this glob (repeatable), e.g. 'mypy*'",
    )  # fmt: skip
    pack_env.add_argument("--level", type=int, default=6, choices=range(1, 10), help="gzip level (default 6)")
    pack_env.set_defaults(func=cmd_pack_env)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sweeper`` console script."""
    args = build_parser().parse_args(argv)
    console = plain_console(width=None if sys.stdout.isatty() or "COLUMNS" in os.environ else 120)  # rich reads COLUMNS
    errors = plain_console(stderr=True)
    try:
        code: int = args.func(args, console)
    except KeyboardInterrupt as stop:
        errors.print(plain("interrupted", "red"))
        return exit_status(stop)
    except UserError as error:
        for problem in error.problems:
            errors.print(plain("error:", "red") + plain(f" {problem}"), soft_wrap=True)
        return USER_ERROR_EXIT
    return code


def plain_console(**options: Any) -> Console:
    """A console that prints strings as written: no markup, emoji codes or highlighting."""
    return Console(markup=False, emoji=False, highlight=False, **options)


if __name__ == "__main__":
    sys.exit(main())

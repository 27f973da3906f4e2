"""``sweeper run GRID``: every launch, measurement and trial of a grid, then the answer."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

from sweeper.config import load as grid_file
from sweeper.config.grid import HALVING, RACE, Grid
from sweeper.errors import UserError
from sweeper.names import OK, PRUNED
from sweeper.planning.dry_run import shrink_plan
from sweeper.planning.plan import Plan, make_plan
from sweeper.planning.view import beyond_this_machine, warning_line
from sweeper.shapes import counted
from sweeper.store.row import Row
from sweeper.text import plain


def add_parser(commands: Any) -> None:
    """Register ``run`` on the CLI's subparsers (``commands`` from ``add_subparsers``)."""
    run: argparse.ArgumentParser = commands.add_parser(
        "run", help="run a sweep: every launch, measurement and trial of a grid"
    )
    run.add_argument("grid", help="grid file (YAML)")
    run.add_argument("--dry-run", action="store_true", help="shrink every launch to fit this machine (rows marked)")
    run.add_argument(
        "--no-reuse", action="store_true",
        help="dry run: measure every planned measurement, even those whose shrunk form is the same",
    )  # fmt: skip
    run.add_argument("--fresh", action="store_true", help="delete this sweep's rows first instead of resuming")
    run.add_argument("--store", help="store directory (default: the grid's store)")
    run.add_argument("--skip-check", action="store_true", help="do not run sweeper check's preflight first")
    run.add_argument(
        "--predict-from", metavar="STORE",
        help="predict each batch from this store's sweep first; rows keep it (predicted_s), the report compares",
    )  # fmt: skip
    run.add_argument("--predict-sweep", metavar="NAME", help="the sweep of --predict-from's store (if several)")
    run.set_defaults(func=main)


def main(args: argparse.Namespace, console: Console) -> int:
    """``sweeper run GRID [--dry-run [--no-reuse]] [--fresh] [--store DIR]``: exit 0 when every measurement is ok,
    3 when a launch did not start, 4 when a measurement failed, 130/143 when stopped (:mod:`sweeper.run.signals`)."""
    from sweeper.run import runner
    from sweeper.run.view import measurement_line, progress_bar, summary_table

    plan = make_plan(grid_file.load(args.grid))
    if args.predict_from:
        plan = _predicted(plan, args, console)
    grid = plan.grid
    for warning in grid.warnings if args.dry_run else [*grid.warnings, *beyond_this_machine(plan)]:
        console.print(warning_line(warning), soft_wrap=True)
    if args.dry_run:
        plan = shrink_plan(plan)
        grid = plan.grid  # its own sweep, NAME-dry-run
    elif grid.manager != "local" and not args.skip_check:
        _check_first(plan, console)
    store = Path(args.store) if args.store else grid.store
    _print_opening(plan, "dry run" if args.dry_run else "sweep", store, console)
    with progress_bar(console, plan.n_measurements) as bar:

        def report(row: Row) -> None:
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
            console.print(plain(f"{grid.search.strategy.capitalize()}: {note}"), soft_wrap=True)
        _print_closing(store, grid, str(result.rows[0]["run_id"]), console)
    failed = sum(1 for row in result.rows if row["status"] not in (OK, PRUNED))
    pruned = sum(1 for row in result.rows if row["status"] == PRUNED)
    why = "stopped by the race" if grid.search.strategy == RACE else "not promoted by halving"
    console.print(
        plain(
            f"{counted(len(result.rows), 'row')} written to {store / grid.name}, {failed} not ok"
            + (f", {pruned} pruned ({why})" if pruned else "")
        )
    )
    if result.interrupted:
        console.print(plain("interrupted", "red") + plain(": the running launch was torn down; finished rows are kept"))
    elif result.exit_reason:  # the last line: why the exit status is not 0 (sweeper.run.signals names the codes)
        console.print(plain(f"exit {result.exit_status}", "red") + plain(f": {result.exit_reason}"), soft_wrap=True)
    return result.exit_status


def _print_opening(plan: Plan, kind: str, store: Path, console: Console) -> None:
    """What the run will do, and why ``auto`` chose its strategy."""
    grid = plan.grid
    console.print(
        plain(f"{kind} ")
        + plain(grid.name, "bold")
        + plain(
            f": {counted(plan.n_measurements, 'measurement')} in {counted(len(plan.launches), 'launch', 'launches')}, "
            f"{counted(plan.n_fits, 'fit')} each, store {store}"
        )
    )
    if grid.search.auto_reason:
        console.print(plain(f"search: auto chose {grid.search.auto_reason}"), soft_wrap=True)


def _predicted(plan: Plan, args: argparse.Namespace, console: Console) -> Plan:
    """The plan with the batch times the what-if model of ``--predict-from``'s sweep predicts (and its error)."""
    from sweeper.results.predict.forecast import learn, unpredicted_engines, with_predictions
    from sweeper.results.predict.view import unpredicted_lines, validation_lines
    from sweeper.store.parquet import load_sweep

    if args.dry_run:
        raise UserError("--predict-from predicts the planned launches, a dry run measures shrunk ones: drop one")
    learned = learn(load_sweep(args.predict_from, args.predict_sweep))
    for line in [*validation_lines(learned), *unpredicted_lines(unpredicted_engines(learned, plan))]:
        console.print(plain(f"predicted from {args.predict_from}: {line}"), soft_wrap=True)
    return with_predictions(plan, learned)


def _print_closing(store: Path, grid: Grid, run_id: str, console: Console) -> None:
    """What ends a run: the cluster time it took, then the answer of ``sweeper recommend``."""
    from sweeper.results.recommend import recommend
    from sweeper.results.recommend_view import answer_lines, memory_sentence
    from sweeper.results.report.sections.measured import dry_run_banner
    from sweeper.search.accounting import cluster_seconds, full_grid_estimate
    from sweeper.store.parquet import load_results

    df = load_results(store, grid.name)
    spent = cluster_seconds(df[df["run_id"] == run_id])
    line = f"Cluster time: {spent.total_s:,.0f} node-seconds, {spent.measured_share:.0%} of it in measured batches"
    if grid.search.strategy in (HALVING, RACE):
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

"""``sweeper run GRID``: every launch, measurement and trial of a grid, then the answer."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rich.console import Console

from sweeper.config import load as grid_file
from sweeper.config.grid import HALVING, RACE, Grid
from sweeper.config.managers import descriptor
from sweeper.errors import UserError
from sweeper.names import OK, PRUNED
from sweeper.planning.dry_run import shrink_plan
from sweeper.planning.plan import Plan, make_plan
from sweeper.planning.view import beyond_this_machine, warning_line
from sweeper.shapes import counted
from sweeper.store.row import Row
from sweeper.text import OUTPUT_COLUMNS, plain, say

if TYPE_CHECKING:
    import pandas as pd

    from sweeper.run.not_taken import NotTaken
    from sweeper.run.runner import RunResult


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
    run.add_argument(
        "--report", metavar="DIR", help="when the run ends, also write the sweep's report into DIR (as sweeper report)"
    )
    run.set_defaults(func=main)


def main(args: argparse.Namespace, console: Console) -> int:
    """``sweeper run GRID [--dry-run [--no-reuse]] [--fresh] [--store DIR]``: exit 0 when every measurement is ok,
    3 when a launch did not start, 4 when a measurement failed, 130/143 when stopped (:mod:`sweeper.run.signals`)."""
    from sweeper.launch.lifecycle import stages_to
    from sweeper.run import runner
    from sweeper.run.progress import run_progress

    console.width = min(console.width, OUTPUT_COLUMNS)  # on a wider terminal too
    plan = make_plan(grid_file.load(args.grid))
    if args.report:
        from sweeper.results.report import report_directory

        report_directory(Path(args.report))  # a directory to write into, before anything is launched
    if args.predict_from:
        plan = _predicted(plan, args, console)
    grid = plan.grid
    for warning in grid.warnings if args.dry_run else [*grid.warnings, *beyond_this_machine(plan)]:
        say(console, warning_line(warning))
    if args.dry_run:
        plan = shrink_plan(plan)
        grid = plan.grid  # its own sweep, NAME-dry-run
    elif not descriptor(grid.manager).on_this_machine and not args.skip_check:
        _check_first(plan, console)
    store = Path(args.store) if args.store else grid.store
    _print_opening(plan, "dry run" if args.dry_run else "sweep", store, console)
    with run_progress(console, plan, plan.n_measurements) as progress, stages_to(progress.stage):
        result = runner.run(
            plan,
            store=store,
            fresh=args.fresh,
            report=progress.row,
            warn=lambda text: progress.print(warning_line(text)),
            progress=progress.advance,
            reuse=not args.no_reuse,
            planned=progress.planned,
        )
    if result.interrupted:
        say(console, plain("interrupted", "red") + plain(": the running launch was torn down; finished rows are kept"))
    if result.skipped:
        say(console, _skipped_line(result.skipped))
    if result.rows or result.interrupted:
        _print_answer(plan, store, result, console)
    failed = sum(1 for row in result.rows if row["status"] not in (OK, PRUNED))
    pruned = sum(1 for row in result.rows if row["status"] == PRUNED)
    why = "stopped by the race" if grid.search.strategy == RACE else "not promoted by halving"
    say(
        console,
        plain(
            f"{counted(len(result.rows), 'row')} written to {store / grid.name}, {failed} not ok"
            + (f", {pruned} pruned ({why})" if pruned else "")
        ),
    )
    if args.report and (result.rows or result.skipped):  # also when every measurement was already there
        from sweeper.results.report import write_report

        written = write_report(store, Path(args.report), sweep=grid.name)
        say(console, plain(f"report: {written[0]} (and {written[1].name}, figures beside it)"))
    if result.exit_reason and not result.interrupted:  # the last line: why the exit status is not 0
        say(console, plain(f"exit {result.exit_status}", "red") + plain(f": {result.exit_reason}"))
    return result.exit_status


def _print_answer(plan: Plan, store: Path, result: RunResult, console: Console) -> None:
    """The summary of the sweep's rows (every run's), the search's notes, the cluster time and the answer."""
    from sweeper.run.not_taken import not_taken
    from sweeper.run.view import summary_table
    from sweeper.store.parquet import load_results

    grid = plan.grid
    frame = load_results(store, grid.name)
    if frame.empty:
        return
    rows = cast(list[Row], frame.astype(object).where(frame.notna(), None).to_dict("records"))
    counts = f"{counted(len(rows), 'row')}, {len(result.rows)} of this run"
    title = f"Summary of sweep {grid.name}: {counts} (medians over trials)"
    console.print(summary_table(rows, title))
    for note in result.notes:
        say(console, f"{grid.search.strategy.capitalize()}: {note}")
    run_id = str(result.rows[0]["run_id"]) if result.rows else None
    _print_closing(frame, grid, run_id, not_taken(plan, store) if result.interrupted else None, console)


def _print_opening(plan: Plan, kind: str, store: Path, console: Console) -> None:
    """What the run will do, and why ``auto`` chose its strategy."""
    grid = plan.grid
    say(
        console,
        plain(f"{kind} ")
        + plain(grid.name, "bold")
        + plain(
            f": {counted(plan.n_measurements, 'measurement')} in {counted(len(plan.launches), 'launch', 'launches')}, "
            f"{counted(plan.n_fits, 'fit')} each, store {store}"
        ),
    )
    if grid.search.auto_reason:
        say(console, f"search: auto chose {grid.search.auto_reason}")


def _predicted(plan: Plan, args: argparse.Namespace, console: Console) -> Plan:
    """The plan with the batch times the what-if model of ``--predict-from``'s sweep predicts (and its error)."""
    from sweeper.results.predict.forecast import learn, unpredicted_engines, with_predictions
    from sweeper.results.predict.view import unpredicted_lines, validation_lines
    from sweeper.store.parquet import load_sweep

    if args.dry_run:
        raise UserError("--predict-from predicts the planned launches, a dry run measures shrunk ones: drop one")
    learned = learn(load_sweep(args.predict_from, args.predict_sweep))
    for line in [*validation_lines(learned), *unpredicted_lines(unpredicted_engines(learned, plan))]:
        say(console, f"predicted from {args.predict_from}: {line}")
    return with_predictions(plan, learned)


def _print_closing(
    df: pd.DataFrame, grid: Grid, run_id: str | None, left: list[NotTaken] | None, console: Console
) -> None:
    """What ends a run: the cluster time it took, then the answer of ``sweeper recommend`` on the sweep's rows;
    ``left``: a stopped run's measurements not taken (the answer is partial, and says what it lacks)."""
    from sweeper.results.dry_run import dry_run_banner
    from sweeper.results.recommend import recommend
    from sweeper.results.recommend_view import answer_lines, memory_sentence
    from sweeper.results.right_sizing import HEADROOM_TEXT
    from sweeper.search.accounting import cluster_seconds, full_grid_estimate

    lines = []
    if run_id is not None:
        spent = cluster_seconds(df[df["run_id"] == run_id])
        line = f"Cluster time: {spent.total_s:,.0f} node-seconds, {spent.measured_share:.0%} of it in measured batches"
        lines.append(line)
        if grid.search.strategy in (HALVING, RACE):
            full = full_grid_estimate(df, grid.search.rung_axis)
            share = f" ({spent.total_s / full.total_s:.0%})" if full.total_s > 0 else ""
            lines.append(f"  the full grid would have taken about {full.total_s:,.0f}{share}")
    banner = dry_run_banner(df)
    recommendation = recommend(df)
    memory = [f"  {memory_sentence(advice)}" for advice in recommendation.memory]
    if memory:
        memory.insert(0, f"Memory (granted vs measured peak; suggested = peak + {HEADROOM_TEXT}):")
    lines += [*([banner] if banner else []), *answer_lines(recommendation, partial=left is not None), *memory]
    if left:
        lines.append("Not measured before the stop (`sweeper run` again takes them):")
        lines += [f"  {_not_taken_text(missing)}" for missing in left]
    for text in lines:
        say(console, text)


def _not_taken_text(missing: NotTaken) -> str:
    """``dask 2 executors x 1 core x 2 GiB at 900, 3 epochs: 2 measurements``."""
    epochs = ", ".join(str(e) for e in missing.epochs)
    count = "not begun" if missing.measurements is None else counted(missing.measurements, "measurement")
    return f"{missing.label} at {epochs} epochs: {count}"


def _check_first(plan: Plan, console: Console) -> None:
    """``sweeper run`` on a cluster: the preflight's problems stop it before anything starts."""
    from sweeper.launch.registry import check_supported
    from sweeper.preflight.run import preflight

    for launch in plan.launches:  # what the grid cannot run at all is named before the cluster is asked
        check_supported(launch.engine, launch.manager)
    say(console, f"checking the {plan.grid.manager} cluster (sweeper check; --skip-check skips it)")
    found = preflight(plan)
    if not found.ok:
        raise UserError([f"sweeper check: {c.check} on {c.node or 'the driver'}: {c.detail}" for c in found.problems()])


def _skipped_line(skipped: int) -> str:
    """The line of measurements a run found in the store.

    >>> _skipped_line(1)
    '1 measurement already in the store was skipped (--fresh starts over)'
    >>> _skipped_line(3)[:40]
    '3 measurements already in the store were'
    """
    were = "was" if skipped == 1 else "were"
    return f"{counted(skipped, 'measurement')} already in the store {were} skipped (--fresh starts over)"

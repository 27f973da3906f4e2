"""``sweeper compare``: the report's engine tables (Spark vs Dask, one per pair of engines), on the terminal
(rich); with ``--against``, whether two sweeps' answers agree (:mod:`sweeper.results.repeat`)."""

from __future__ import annotations

import io

import pandas as pd
from rich.console import Console
from rich.table import Table

from sweeper.config.work import EPOCHS
from sweeper.results import statistics
from sweeper.results.dry_run import dry_run_banner
from sweeper.results.repeat import Repetition
from sweeper.results.report.sections.engines import DEFAULT_PAIR, Pair, engine_pairs, engine_rows, pair_title
from sweeper.text import plain

VERDICT_STYLE = {"dask faster": "cyan", "spark faster": "yellow", statistics.TOO_FEW_TRIALS: "dim"}


def compare_table(df: pd.DataFrame, pair: Pair = DEFAULT_PAIR) -> Table:
    """The ``pair``'s table for ``sweeper compare`` (rich; Spark vs Dask by default), failures counted in the
    caption.

    Every cell goes through :func:`~sweeper.text.plain`: no store string is read as console markup.
    """
    header, lines = engine_rows(df, pair)
    failed = int(statistics.failed_mask(df).sum())
    notes = [f"{failed} failed or timed-out measurement(s) left out; `sweeper report` lists them"] if failed else []
    notes += [banner] if (banner := dry_run_banner(df)) else []
    title = f"{pair_title(pair)}: median fit time over ok trials"
    table = Table(title=title, caption="\n".join(notes) or None)
    for name in header:
        table.add_column(plain(name))
    for line in lines:
        table.add_row(*(plain(cell) for cell in line[:-1]), plain(line[-1], VERDICT_STYLE.get(line[-1], "bold")))
    return table


def compare_tables(df: pd.DataFrame) -> list[Table]:
    """One :func:`compare_table` per pair of the joblib engines ``df`` measured (Spark vs Dask for two)."""
    return [compare_table(df, pair) for pair in engine_pairs(df)]


def compare_text(df: pd.DataFrame, width: int = 160) -> str:
    """:func:`compare_tables` as plain text (no colour), as ``sweeper compare`` prints them."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None, force_terminal=False, markup=False, emoji=False)
    for table in compare_tables(df):
        console.print(table)
    return buffer.getvalue()


def repetition_table(repeated: Repetition, first: str, second: str, work_axis: str = EPOCHS) -> Table:
    """The answers of sweeps ``first`` and ``second`` point by point (the work axis's column named ``work_axis``),
    and whether they agree (a workload column only where the points' workloads differ, with what differs)."""
    table = Table(title=f"Does the answer repeat? {first} against {second}", caption=repeated.summary)
    varying = [
        key
        for key in dict.fromkeys(k for p in repeated.points for k in p.workload)
        if len({repr(p.workload.get(key)) for p in repeated.points}) > 1
    ]
    for name in (*(["workload"] if varying else []), work_axis, first, second, "agree", "why"):
        table.add_column(plain(name))
    for point in repeated.points:
        workload = [", ".join(f"{key}={point.workload.get(key)}" for key in varying)] if varying else []
        answers = (f"{a.winner.label} ({a.verdict})" for a in (point.first, point.second))
        agree = plain("yes", "green") if point.agrees else plain("no", "red")
        cells = (*workload, str(point.epochs), *answers)
        table.add_row(*(plain(cell) for cell in cells), agree, plain(point.why))
    return table

"""``sweeper report`` and ``sweeper compare``: one sweep's results as HTML, Markdown and PNGs, or a terminal table.

The flow: :func:`load_sweep` reads the rows, :mod:`.content` turns them into blocks (headings, text,
tables, figures drawn by :mod:`.plots`), :mod:`.render_md` and :mod:`.render_html` write the blocks,
and :func:`write_report` puts the files in place. :mod:`.terminal` prints the Spark vs Dask table.
"""

from __future__ import annotations

import os
import platform
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from sweeper.errors import UserError
from sweeper.results.report.content import Picture, build_report
from sweeper.results.report.render_html import to_html
from sweeper.results.report.render_md import to_markdown
from sweeper.results.report.terminal import compare_table, compare_text
from sweeper.results.store import load_results, sweep_dir, sweeps

REPORT_HTML = "report.html"
REPORT_MD = "report.md"


def load_sweep(store: str | Path, sweep: str | None = None) -> pd.DataFrame:
    """The rows of one sweep of a store; a store of several sweeps needs ``sweep``.

    Only that sweep's files are read: a broken file of another sweep does not stop its report.
    Raises :class:`~sweeper.errors.UserError` for a missing or empty store, for several sweeps
    and no name (listing them), for a name the store does not hold (listing those it does), and
    for a file of the sweep that cannot be read (naming it).
    """
    if not Path(store).is_dir():
        raise UserError(f"{store}: no such store directory")
    names = sweeps(store)
    if sweep is None and len(names) > 1:
        raise UserError(f"{store} holds {len(names)} sweeps: {', '.join(names)}; pass one with --sweep NAME")
    if sweep is not None and sweep not in names:
        sweep_dir(Path(store), sweep)  # a name that is no sweep's directory name is refused as such
        raise UserError(f"{store}: no sweep {sweep!r}; the store holds: {', '.join(names) or 'no sweep'}")
    df = load_results(store, sweep or (names[0] if names else None))
    if df.empty:
        raise UserError(f"{store}: the store holds no measurements; run a sweep into it first (sweeper run GRID)")
    return df


def this_machine() -> str:
    """Where the report is made: host, CPUs, OS, Python, time."""
    now = datetime.now(UTC)
    return (
        f"{platform.node()}, {os.cpu_count()} CPUs, {platform.platform()}, Python {platform.python_version()}, "
        f"{now:%Y-%m-%d %H:%M} UTC"
    )


def write_report(
    store: str | Path, out_dir: str | Path, sweep: str | None = None, cost_per_node_hour: float | None = None
) -> list[Path]:
    """Write ``report.html`` (self-contained), ``report.md`` and its PNGs for one sweep of a store.

    Returns the paths written: the HTML, the Markdown, then the PNGs.

    Examples
    --------
    After ``make sweep GRID=grids/2node.yaml``::

        write_report("results/", "report/", sweep="2node")
        # [PosixPath('report/report.html'), PosixPath('report/report.md'), PosixPath('report/fit_time_box.png'), ...]
    """
    df = load_sweep(store, sweep)
    out = _report_directory(Path(out_dir))
    blocks = build_report(df, machine=this_machine(), cost_per_node_hour=cost_per_node_hour)
    files = {block.name: block.png for block in blocks if isinstance(block, Picture)}
    files[REPORT_MD] = to_markdown(blocks).encode("utf-8")
    files[REPORT_HTML] = to_html(blocks).encode("utf-8")
    for name, content in files.items():
        try:
            (out / name).write_bytes(content)
        except OSError as error:
            raise UserError(f"{out / name}: cannot write the report: {error.strerror or error}") from None
    return [out / REPORT_HTML, out / REPORT_MD, *(out / name for name in files if name.endswith(".png"))]


def _report_directory(out: Path) -> Path:
    """The report's directory, created if missing; a file in its way or a place that refuses it is a UserError."""
    if out.exists() and not out.is_dir():
        raise UserError(f"{out}: exists and is not a directory; --out takes a directory (created if missing)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        where = f" ({error.filename})" if error.filename else ""
        raise UserError(f"{out}: cannot create the report directory: {error.strerror or error}{where}") from None
    return out


__all__ = [
    "build_report",
    "compare_table",
    "compare_text",
    "load_sweep",
    "to_html",
    "to_markdown",
    "write_report",
]

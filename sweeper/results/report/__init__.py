"""``sweeper report`` and ``sweeper compare``: one sweep's results as HTML, Markdown and PNGs, or a terminal table.

The flow: :func:`sweeper.store.parquet.load_sweep` reads the rows, :mod:`.content` turns them into blocks
(headings, text, tables, figures drawn by :mod:`.plots`), :mod:`.render_md` and :mod:`.render_html` write the
blocks, and :func:`write_report` puts the files in place. :mod:`.terminal` prints the Spark vs Dask table.
"""

from __future__ import annotations

import os
import platform
from datetime import UTC, datetime
from pathlib import Path

from sweeper.errors import UserError
from sweeper.results.report.blocks import Picture
from sweeper.results.report.content import build_report
from sweeper.results.report.render_html import to_html
from sweeper.results.report.render_md import to_markdown
from sweeper.results.report.terminal import compare_table, compare_tables, compare_text
from sweeper.store.parquet import load_sweep

REPORT_HTML = "report.html"
REPORT_MD = "report.md"


def _this_machine() -> str:
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
    out = report_directory(Path(out_dir))
    blocks = build_report(df, machine=_this_machine(), cost_per_node_hour=cost_per_node_hour)
    files = {block.name: block.png for block in blocks if isinstance(block, Picture)}
    files[REPORT_MD] = to_markdown(blocks).encode("utf-8")
    files[REPORT_HTML] = to_html(blocks).encode("utf-8")
    for name, content in files.items():
        try:
            (out / name).write_bytes(content)
        except OSError as error:
            raise UserError(f"{out / name}: cannot write the report: {error.strerror or error}") from None
    return [out / REPORT_HTML, out / REPORT_MD, *(out / name for name in files if name.endswith(".png"))]


def report_directory(out: Path) -> Path:
    """The report's directory, created if missing; a file in its way or a place that refuses it is a UserError."""
    if out.exists() and not out.is_dir():
        raise UserError(
            f"{out}: exists and is not a directory; a report is written into a directory (created if missing)"
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        where = f" ({error.filename})" if error.filename else ""
        raise UserError(f"{out}: cannot create the report directory: {error.strerror or error}{where}") from None
    return out


__all__ = [
    "build_report",
    "compare_table",
    "compare_tables",
    "compare_text",
    "load_sweep",
    "report_directory",
    "to_html",
    "to_markdown",
    "write_report",
]

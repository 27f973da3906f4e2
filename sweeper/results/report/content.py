"""The report's content: one sweep's rows as a list of blocks (headings, text, tables of formatted cells, figures).

:func:`build_report` puts the sections in order: the answer (:mod:`.sections.answer`, from
:mod:`sweeper.results.recommend`), what was measured, the method, then per workload the tables per
configuration (and the baseline) with their figures, Spark vs Dask, configurations compared, speedup
and COST, time vs price; then adaptive trials and successive halving; last the failed measurements.
Each section is a module of :mod:`.sections` over the block types of :mod:`.blocks` and the cell
formats of :mod:`.formatting`; the figures come from :mod:`.plots` as PNG bytes. Nothing here is
Markdown or HTML: :mod:`.render_md` and :mod:`.render_html` write the blocks.
"""

from __future__ import annotations

import pandas as pd

from sweeper.results import statistics
from sweeper.results.dry_run import dry_run_banner
from sweeper.results.predict.forecast import work_axis_name
from sweeper.results.report.blocks import Block, Bullets, Heading, Paragraph, Picture, Rows
from sweeper.results.report.formatting import distinct
from sweeper.results.report.sections import (
    configurations,
    engines,
    failures,
    measured,
    method,
    predicted,
    scaling,
    search,
)
from sweeper.results.report.sections.answer import answer_blocks

__all__ = ["Block", "Bullets", "Heading", "Paragraph", "Picture", "Rows", "build_report"]


def build_report(df: pd.DataFrame, machine: str = "", cost_per_node_hour: float | None = None) -> list[Block]:
    """All blocks of the report of one sweep's rows (``machine`` describes where it was made)."""
    sweep = ", ".join(distinct(df, "sweep"))
    blocks: list[Block] = [Heading(f"sweeper report: {sweep}", level=1)]
    banner = dry_run_banner(df)
    if banner:
        blocks.append(Paragraph(banner))
    blocks += answer_blocks(df, cost_per_node_hour)
    blocks += measured.measured_blocks(df, machine)
    blocks += method.method_blocks(work_axis_name(df))
    groups = list(df.groupby(statistics.workload_keys(df), dropna=False, sort=True))
    for index, (_, rows) in enumerate(groups, start=1):
        prefix = f"workload{index}_" if len(groups) > 1 else ""
        blocks += [Heading(f"Results: {configurations.workload_label(rows)}")]
        blocks += _workload_blocks(rows.reset_index(drop=True), prefix, cost_per_node_hour)
    blocks += search.search_blocks(df)
    blocks += predicted.predicted_blocks(df)
    blocks += failures.failure_blocks(df)
    return blocks


def _workload_blocks(rows: pd.DataFrame, prefix: str, cost_per_node_hour: float | None) -> list[Block]:
    """One workload's sections; ``prefix`` keeps its figures' file names apart from other workloads'."""
    blocks = configurations.time_blocks(rows, prefix)
    blocks += engines.engine_blocks(rows)
    blocks += configurations.comparison_blocks(rows)
    blocks += scaling.speedup_blocks(rows, prefix)
    if cost_per_node_hour is not None:
        blocks += scaling.price_blocks(rows, prefix, cost_per_node_hour)
    return blocks

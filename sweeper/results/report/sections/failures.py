""" "Failed measurements": every failed or timed-out row with its error, never in a statistic."""

from __future__ import annotations

import pandas as pd

from sweeper.results import statistics
from sweeper.results.predict.forecast import work_axis_name
from sweeper.results.report.blocks import Block, Heading, Paragraph, Rows
from sweeper.results.report.formatting import axis_header, value_text


def failure_blocks(df: pd.DataFrame) -> list[Block]:
    """The failed and timed-out measurements, oldest first, or that every measurement finished ok."""
    bad = statistics.failures(df)
    blocks: list[Block] = [Heading("Failed measurements")]
    if bad.empty:
        return [*blocks, Paragraph("None: every measurement finished ok.")]
    lines = [
        (
            f"{row['started_at']:%Y-%m-%d %H:%M:%S}" if pd.notna(row["started_at"]) else "?",
            str(row["engine"]),
            str(row["config"]),
            str(row["epochs"]),
            str(row["trial"]),
            str(row["status"]),
            value_text(row["error_type"]),
            value_text(row["error"])[:500],
        )
        for row in bad.to_dict("records")
    ]
    header = (
        "Started (UTC)",
        "Engine",
        "Config",
        axis_header(work_axis_name(df)),
        "Trial",
        "Status",
        "Error type",
        "Error",
    )
    return [
        *blocks,
        Paragraph(f"{len(bad)} measurement(s) did not finish ok; they are left out of every statistic above."),
        Rows("Failed and timed-out measurements", header, tuple(lines)),
    ]

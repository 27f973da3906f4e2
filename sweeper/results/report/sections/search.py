"""Adaptive trials and successive halving: why points stopped, each rung, the pruned, the cluster time saved."""

from __future__ import annotations

import pandas as pd

from sweeper.config.work import EPOCHS
from sweeper.results import statistics
from sweeper.results.predict.forecast import work_axis_name
from sweeper.results.report.blocks import Block, Heading, Paragraph, Rows
from sweeper.results.report.formatting import axis_header, seconds_text, value_text
from sweeper.search import accounting


def search_blocks(df: pd.DataFrame) -> list[Block]:
    """Adaptive trials, successive halving and racing: why points stopped, each rung or race, the time saved."""
    blocks: list[Block] = []
    racing = df["race_round"].notna().to_numpy()
    if racing.any():
        blocks += _race_blocks(df)
    reasons = df.loc[~racing, "stop_reason"].dropna()
    if len(reasons):
        counts = ", ".join(f"{count} {reason}" for reason, count in reasons.value_counts().items())
        blocks += [
            Heading("Adaptive trials"),
            Paragraph(f"Points measured until the 95 % CI of their median was tight enough: {counts}."),
        ]
    if df["rung"].isna().all():
        return blocks
    return [*blocks, *_halving_blocks(df)]


def _race_blocks(df: pd.DataFrame) -> list[Block]:
    """ "Racing": how the races decided, each configuration's trials and ending, the cluster time against the grid's."""
    race = df[df["race_round"].notna().to_numpy()]
    delta, confidence = float(race["race_delta"].dropna().iloc[0]), float(race["race_confidence"].dropna().iloc[0])
    spent, full = accounting.cluster_seconds(df), accounting.full_grid_estimate(df)
    share = f" ({spent.total_s / full.total_s:.0%} of it)" if full.total_s > 0 else ""
    standings = statistics.race_standings(df)
    return [
        Heading("Racing"),
        Paragraph(
            "Every workload point was a race of its configurations: 2 trials each first, then decisions at "
            "trial counts growing by half. A configuration left the race once it was confidently more than "
            f"{delta:.0%} slower than the leader; a race settled once the leader was within {delta:.0%} of every "
            f"configuration still in it, each decision at confidence {confidence:g} (those still in it were not "
            f"shown more than {delta:.0%} slower than the leader). A race that reached its most trials unsettled "
            f"promises nothing of the kind. Cluster time of the rows: {spent.total_s:,.0f} node-seconds; the full "
            f"grid would have taken about {full.total_s:,.0f}{share}."
        ),
        Rows(
            "Races (fastest first at each point; trials: ok ones; decisions: the last it was measured for)",
            (
                "Engine",
                "Config",
                axis_header(work_axis_name(df)),
                "Fraction",
                "Trials",
                "Decisions",
                "Ended",
                "Median s",
            ),
            tuple(
                (
                    str(r["engine"]),
                    str(r["config"]),
                    str(r["epochs"]),
                    str(r["fraction"]),
                    str(r["trials"]),
                    str(r["decisions"]),
                    str(r["ended"]),
                    seconds_text(r["median_s"]),
                )
                for r in standings.to_dict("records")
            ),
        ),
    ]


def _halving_blocks(df: pd.DataFrame) -> list[Block]:
    """ "Successive halving": the cluster time against the full grid's, the rungs and the pruned rows."""
    axis = accounting.rung_axis_of(df)  # as the rows recorded it
    spent, full = accounting.cluster_seconds(df), accounting.full_grid_estimate(df, axis)
    work_axis = work_axis_name(df)
    named = work_axis if axis == EPOCHS else axis  # the rung axis by the name of the work axis it grew
    share = f" ({spent.total_s / full.total_s:.0%} of it)" if full.total_s > 0 else ""
    return [
        Heading("Successive halving"),
        Paragraph(
            f"Each rung measured the configurations still in the race at the next value of {named}; only the "
            "fastest went on, and where the order of the configurations changed from one rung to the next "
            "(Kendall's tau below 0.5: the cheap rung did not predict the next) pruned ones were brought back. "
            f"Cluster time of the rows: {spent.total_s:,.0f} node-seconds, {spent.measured_share:.0%} of it in "
            f"measured batches; the full grid would have taken about {full.total_s:,.0f}{share}."
        ),
        Rows(
            "Rungs (rank agreement: Kendall's tau of the pairs confidently apart at this rung and the previous one)",
            (
                "Rung",
                axis.capitalize() if named == axis else named,
                "Configurations measured",
                "Pruned",
                "Rank agreement",
            ),
            tuple(_rung_lines(statistics.rungs(df, axis))),
        ),
        Rows(
            "Pruned: not measured (never in a statistic)",
            ("Engine", "Config", axis_header(work_axis), "Fraction", "Rung", "Why"),
            tuple(
                (
                    str(r["engine"]),
                    str(r["config"]),
                    str(r["epochs"]),
                    str(r["fraction"]),
                    str(r["rung"]),
                    value_text(r["error"]),
                )
                for r in statistics.pruned(df).to_dict("records")
            ),
        ),
    ]


def _rung_lines(table: pd.DataFrame) -> list[tuple[str, ...]]:
    """Per rung: its value of the axis, configurations measured, pruned, rank agreement with the rung before."""
    return [
        (
            str(row["rung"]),
            ", ".join(str(v) for v in row["values"]),
            str(row["measured"]),
            str(row["pruned"]),
            _agreement_text(row["agreement"], int(row["compared"])),
        )
        for _, row in table.iterrows()
    ]


def _agreement_text(agreement: float, compared: int) -> str:
    """Kendall's tau of a rung with the one before, or that no pair compared was confidently apart.

    >>> _agreement_text(0.5, 3), _agreement_text(float("nan"), 2), _agreement_text(float("nan"), 0)
    ('0.50 (3 configurations)', 'no pair confidently apart (2 configurations)', '-')
    """
    if compared < 2:
        return "-"
    text = "no pair confidently apart" if pd.isna(agreement) else f"{agreement:.2f}"
    return f"{text} ({compared} configurations)"

"""The banner a dry run's rows carry wherever they are shown (the run's answer, recommend, replay, the report).

Not in :mod:`sweeper.results.report`, whose package draws figures: the commands that print text import no matplotlib.
"""

from __future__ import annotations

import pandas as pd


def dry_run_banner(df: pd.DataFrame) -> str | None:
    """The warning a dry run's tables carry: the real sweep's structure, times that mean nothing."""
    dry = df["dry_run"].fillna(False).astype(bool) if "dry_run" in df else pd.Series(dtype=bool)
    if not dry.any():
        return None
    share = "" if dry.all() else f" ({int(dry.sum())} of {len(dry)} rows)"
    return (
        f"DRY RUN{share}: measured on launches shrunk to the machine that ran them, with capped epochs and "
        "training rows. Configurations, epochs and engines are the grid's, as the real sweep will have them; "
        "times, speedups and verdicts are not meaningful."
    )

"""Predicted vs measured: where the sweep was run with predictions (``sweeper run --predict-from``), how close they
came."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sweeper.results.predict.forecast import work_axis_name
from sweeper.results.report import plots
from sweeper.results.report.blocks import Block, Heading, Paragraph, Picture, Rows
from sweeper.results.statistics import ok_mask
from sweeper.shapes import shape_text

KEYS = [  # a configuration and workload point: rows of one point only are pooled into a median
    "engine", "nodes", "cores_per_executor", "executors", "executor_memory_gib",
    "dataset", "fraction", "n_fits", "threads_per_fit", "epochs",
]  # fmt: skip


def predicted_blocks(df: pd.DataFrame) -> list[Block]:
    """Each configuration and value of the work axis: the predicted and the measured median batch time and the
    error."""
    rows = df[ok_mask(df) & df["predicted_s"].notna()]
    if rows.empty:
        return []
    table = (
        rows.groupby(KEYS, sort=True, dropna=False)
        .agg(predicted_s=("predicted_s", "median"), measured_s=("fit_wall_s", "median"))
        .reset_index()
    )
    errors = (table["predicted_s"] / table["measured_s"] - 1).abs()
    cells = tuple(
        (
            str(r["engine"]),
            shape_text(int(r["executors"]), int(r["cores_per_executor"]), float(r["executor_memory_gib"])),
            str(int(r["epochs"])),
            f"{r['predicted_s']:.3g}",
            f"{r['measured_s']:.3g}",
            f"{error:.1%}",
        )
        for r, error in zip(table.to_dict("records"), errors, strict=True)
    )
    return [
        Heading("Predicted vs measured"),
        Paragraph(
            "The sweep was run with predictions of the what-if model (`sweeper run --predict-from`): "
            f"median error {float(np.median(errors)):.1%}, largest {float(errors.max()):.1%} over "
            f"{len(table)} configuration-points."
        ),
        Rows(
            "Median batch time predicted before the run and measured",
            ("engine", "configuration", work_axis_name(df), "predicted (s)", "measured (s)", "error"),
            cells,
        ),
        Picture(
            "predicted_vs_measured.png",
            "Predicted vs measured median batch time",
            plots.png(plots.predicted_vs_measured(table)),
        ),
    ]

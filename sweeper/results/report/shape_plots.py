"""The figures with a line per configuration: fit-time boxes, and the answer's medians with their intervals.

Configurations run down the y axis in the one order of :func:`~sweeper.results.report.selection.shape_order`
(the baseline first), each configuration's engines side by side in theirs. The panels (one per epochs value)
sit in a row and share that axis: a configuration is at the same height in every panel, and its label is
written once per row of panels, horizontally, so that labels never overlap whatever their length. Each
function returns the figure (:func:`~sweeper.results.report.plots.png` writes it).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from sweeper.config.work import EPOCHS, axis_text
from sweeper.names import BASELINE_ENGINE, CONFIG
from sweeper.results.report.plots import PAGE_WIDTH_IN, engine_color, engines_drawn, readable, short_config, shown
from sweeper.results.report.selection import shape_order, with_note
from sweeper.results.statistics import ok_mask

PANELS_A_ROW = 3
LINE_IN = 0.3  # the height of one engine's box or point
GAP_IN = 0.2  # between two configurations
BAND = 0.8  # of a configuration's height, what its engines' boxes share
# matplotlib 3.10 names the boxes' direction `orientation`, and 3.11 deprecates `vert` (setup.cfg allows 3.6)
HORIZONTAL: dict[str, Any] = (
    {"orientation": "horizontal"} if "orientation" in inspect.signature(Axes.boxplot).parameters else {"vert": False}
)


def _configuration_panels(titles: Sequence[str], labels: Sequence[str], engines: int) -> tuple[Figure, list[Axes]]:
    """One panel per title, :data:`PANELS_A_ROW` a row, sharing a y axis of ``labels`` from the top down.

    Each configuration is one unit of y, its height room for ``engines`` boxes side by side.
    """
    count = max(len(titles), 1)
    columns = min(count, PANELS_A_ROW)
    rows = math.ceil(count / columns)
    panel_in = 1.1 + len(labels) * (max(engines, 1) * LINE_IN + GAP_IN)
    width_in = PAGE_WIDTH_IN if columns > 1 else 0.7 * PAGE_WIDTH_IN
    figure = Figure(figsize=(width_in, 0.6 + rows * panel_in), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False, sharey=True).ravel().tolist()
    for extra in axes[count:]:
        extra.set_visible(False)
    axes[0].set_yticks(range(len(labels)), list(labels))
    axes[0].set_ylim(len(labels) - 0.5, -0.5)  # the first configuration on top
    for axis, title in zip(axes, titles, strict=False):
        axis.set_title(title)
        axis.grid(axis="x", alpha=0.3)
    return figure, axes[:count]


def offset(engine: str, engines: Sequence[str]) -> float:
    """Where ``engine``'s box sits within its configuration's unit of y (the baseline, alone on its line: 0).

    >>> offset("spark", ["spark", "dask"]), offset("dask", ["spark", "dask"]), offset("local", ["spark", "dask"])
    (-0.2, 0.2, 0.0)
    """
    if engine not in engines:
        return 0.0
    return (engines.index(engine) - (len(engines) - 1) / 2) * BAND / len(engines)


@readable
def box_fit_time(rows: pd.DataFrame, note: str = "", work_axis: str = EPOCHS) -> Figure:
    """Box plots of fit time (ok trials) per configuration and engine, one panel per value of the work axis
    (named ``work_axis``).

    ``note`` (what was left out) goes in the title.
    """
    ok = rows[ok_mask(rows) & rows["fit_wall_s"].notna()]
    firsts = ok.drop_duplicates(["engine", *CONFIG])
    label_of = {_key(row): short_config(row) for row in firsts.to_dict("records")}
    ok = ok.assign(_label=[label_of[key] for key in zip(ok["engine"], *(ok[c] for c in CONFIG), strict=True)])
    order = shape_order(ok, "_label")
    engines = [engine for engine in engines_drawn(ok["engine"].unique()) if engine != BASELINE_ENGINE]
    epochs = sorted(ok["epochs"].dropna().unique())
    figure, axes = _configuration_panels([axis_text([epoch], work_axis) for epoch in epochs], order, len(engines))
    place = {label: index for index, label in enumerate(order)}
    for axis, epoch in zip(axes, epochs, strict=False):
        at = ok[ok["epochs"] == epoch]
        for engine in engines_drawn(at["engine"].unique()):
            boxes = list(at[at["engine"] == engine].groupby("_label", sort=False)["fit_wall_s"])
            y = [place[label] + offset(engine, engines) for label, _ in boxes]
            drawn = axis.boxplot(
                [times.to_numpy(dtype=float) for _, times in boxes],
                positions=y,
                widths=0.8 * BAND / max(len(engines), 1),
                patch_artist=True,
                manage_ticks=False,
                medianprops={"color": "black"},
                **HORIZONTAL,
            )
            for patch in drawn["boxes"]:
                patch.set_facecolor(engine_color(engine))
                patch.set_alpha(0.55)
        axis.set_xlabel("fit time (s)")
    handles = [Patch(facecolor=engine_color(e), alpha=0.55, label=shown(e)) for e in engines_drawn(ok["engine"])]
    axes[0].legend(handles=handles, loc="best")
    figure.suptitle(with_note("Fit time per configuration and engine (ok trials)", note, "\n"))
    return figure


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    """A configuration's key with its engine, as the rows' columns hold it."""
    return (row["engine"], *(row[c] for c in CONFIG))


@readable
def time_by_configuration(arms: pd.DataFrame, note: str = "") -> Figure:
    """Median time with its 95 % CI per configuration, a colour per engine, one panel per ``panel`` value.

    ``arms`` columns: ``panel`` (title, e.g. the epochs), ``engine``, the configuration's columns and ``config``
    (its short label), ``median_s``, ``low_s``, ``high_s``, ``winner`` (ringed).
    """
    panels = list(dict.fromkeys(arms["panel"]))
    order = shape_order(arms, "config")
    engines = engines_drawn(arms["engine"].unique())
    figure, axes = _configuration_panels([shown(panel) for panel in panels], order, len(engines))
    place = {label: index for index, label in enumerate(order)}
    for axis, panel in zip(axes, panels, strict=False):
        group = arms[arms["panel"] == panel]
        for engine in engines:
            mine = group[group["engine"] == engine]
            if mine.empty:
                continue
            y = mine["config"].map(place).to_numpy(dtype=float) + offset(engine, engines)
            median = mine["median_s"].to_numpy(dtype=float)
            spread = np.vstack(
                [median - mine["low_s"].to_numpy(dtype=float), mine["high_s"].to_numpy(dtype=float) - median]
            )
            axis.errorbar(median, y, xerr=spread, fmt="o", capsize=4, color=engine_color(engine))
            won = mine["winner"].to_numpy(dtype=bool)
            axis.scatter(median[won], y[won], s=180, facecolors="none", edgecolors="black", zorder=4)
        axis.set_xlabel("median fit time (s), 95 % CI")
    handles = [Line2D([], [], marker="o", linestyle="none", color=engine_color(e), label=shown(e)) for e in engines]
    axes[0].legend(handles=handles, loc="best")
    figure.suptitle(with_note("Time per configuration and engine (ringed: the recommendation)", note, "\n"))
    return figure

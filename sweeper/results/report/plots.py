"""The report's figures, drawn with matplotlib's object API (no pyplot state, Agg canvas).

Each function takes tables of :mod:`sweeper.results.statistics` (or the rows, for the box plots) of one
workload and returns PNG bytes.
"""

from __future__ import annotations

import io
import math
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from sweeper.names import BASELINE_ENGINE, CONFIG
from sweeper.results.statistics import NEVER, ok_mask, pareto_front
from sweeper.shapes import BASELINE_TEXT, shape_text
from sweeper.text import visible

ENGINE_COLORS = {"spark": "#e8710a", "dask": "#1f77b4", BASELINE_ENGINE: "#555555"}
OTHER_COLORS = ("#2ca02c", "#9467bd", "#8c564b", "#e377c2")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
DPI = 100


def engine_color(engine: str) -> str:
    """The engine's colour, the same in every figure."""
    return ENGINE_COLORS.get(engine, OTHER_COLORS[zlib.crc32(engine.encode()) % len(OTHER_COLORS)])


def shown(text: object) -> str:
    r"""Text from the store (an engine name) as a figure label, as written: a '$' starts no maths, control
    characters show as ``\xNN`` (:func:`~sweeper.text.visible`).

    >>> shown("spark$x$\x1b[31m")
    'spark\\$x\\$\\x1b[31m'
    """
    return visible(str(text)).replace("$", r"\$")


def short_config(row: Any) -> str:
    """A configuration's label in a plot (:func:`sweeper.shapes.shape_text`).

    >>> short_config({"engine": "dask", "cores_per_executor": 5, "executors": 7, "executor_memory_gib": 13.0})
    '7 executors x 5 cores x 13 GiB'
    >>> short_config({"engine": "local", "cores_per_executor": 1, "executors": 1, "executor_memory_gib": 0.0})
    '1 thread (baseline)'
    """
    cores, executors, memory = (row[c] for c in CONFIG)
    return shape_text(executors, cores, memory, baseline=row["engine"] == BASELINE_ENGINE)


def png(figure: Figure) -> bytes:
    """The figure as PNG bytes."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight", metadata={"Software": None})
    return buffer.getvalue()


def _panels(count: int, width_in: float = 5.0, height_in: float = 3.6) -> tuple[Figure, list[Axes]]:
    columns = min(count, 2)
    rows = math.ceil(count / columns)
    figure = Figure(figsize=(width_in * columns, height_in * rows), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False).ravel().tolist()
    for extra in axes[count:]:
        extra.set_visible(False)
    return figure, axes[:count]


def _shapes(table: pd.DataFrame) -> dict[tuple[Any, ...], tuple[str, str]]:
    """A marker and a short label per configuration, in the order of the configurations."""
    labels = {tuple(row[c] for c in CONFIG): short_config(row) for _, row in table.iterrows()}
    keys = sorted(labels, key=lambda key: tuple(float(v) if pd.notna(v) else -1.0 for v in key))
    return {key: (MARKERS[i % len(MARKERS)], labels[key]) for i, key in enumerate(keys)}


def _engine_legend(axis: Axes, engines: Any) -> None:
    for engine in sorted(str(e) for e in engines):
        axis.scatter([], [], color=engine_color(engine), label=shown(engine))


def _series(table: pd.DataFrame) -> Iterator[tuple[str, str, pd.DataFrame]]:
    """(engine, short config, rows sorted by epochs) per engine and configuration, baseline last."""
    keys = ["engine", *CONFIG]
    for key, group in table.groupby(keys, dropna=False, sort=True):
        engine = str(key[0])
        if engine != BASELINE_ENGINE:
            yield engine, short_config(group.iloc[0]), group.sort_values("epochs")
    for _, group in table[table["engine"] == BASELINE_ENGINE].groupby(keys, dropna=False):
        yield BASELINE_ENGINE, BASELINE_TEXT, group.sort_values("epochs")


def box_fit_time(rows: pd.DataFrame) -> bytes:
    """Box plots of fit time (ok trials) per configuration and engine, one panel per epoch count."""
    ok = rows[ok_mask(rows)]
    epochs = sorted(ok["epochs"].dropna().unique())
    figure, axes = _panels(max(len(epochs), 1), width_in=6.0)
    for axis, epoch in zip(axes, epochs, strict=False):
        data, labels, colors = [], [], []
        for key, group in ok[ok["epochs"] == epoch].groupby(["engine", *CONFIG], dropna=False, sort=True):
            data.append(group["fit_wall_s"].to_numpy(dtype=float, na_value=np.nan))
            labels.append(f"{shown(key[0])}\n{short_config(group.iloc[0])}")
            colors.append(engine_color(str(key[0])))
        boxes = axis.boxplot(data, patch_artist=True, widths=0.6, medianprops={"color": "black"})
        for patch, color in zip(boxes["boxes"], colors, strict=True):
            patch.set_facecolor(color)
            patch.set_alpha(0.55)
        axis.set_xticks(range(1, len(labels) + 1), labels, fontsize=7)
        axis.set_title(f"{epoch} epochs")
        axis.set_ylabel("fit time (s)")
        axis.grid(axis="y", alpha=0.3)
    figure.suptitle("Fit time per configuration and engine (ok trials)")
    return png(figure)


def versus_epochs(table: pd.DataFrame) -> bytes:
    """Median time and accuracy against epochs, a line per engine and configuration (from ``summary``)."""
    figure, (time_axis, accuracy_axis) = _panels(2)
    markers = _shapes(table)
    measured = table[table["n"] > 0]
    for engine, label, group in _series(measured):
        marker = markers[tuple(group.iloc[0][c] for c in CONFIG)][0]
        style: dict[str, Any] = {
            "color": engine_color(engine),
            "marker": marker,
            "linestyle": "--" if engine == BASELINE_ENGINE else "-",
            "label": f"{shown(engine)} {label}",
        }
        epochs = group["epochs"].to_numpy(dtype=float)
        median = group["median_s"].to_numpy(dtype=float)
        spread = np.vstack([median - group["q1_s"].to_numpy(dtype=float), group["q3_s"].to_numpy(dtype=float) - median])
        time_axis.errorbar(epochs, median, yerr=spread, capsize=3, **style)
        accuracy_axis.plot(epochs, group["accuracy"].to_numpy(dtype=float), **style)
    for axis, ylabel in ((time_axis, "median fit time (s), IQR bars"), (accuracy_axis, "median accuracy")):
        axis.set_xlabel("epochs")
        axis.set_ylabel(ylabel)
        axis.grid(alpha=0.3)
        if _spans_decade(measured["epochs"]):
            axis.set_xscale("log")
    time_axis.set_title("Time vs epochs")
    accuracy_axis.set_title("Accuracy vs epochs")
    time_axis.legend(fontsize=7)
    return png(figure)


def _spans_decade(epochs: pd.Series) -> bool:
    values = epochs.dropna().astype(float)
    return bool(len(values) and values.min() > 0 and values.max() / values.min() >= 10)


def accuracy_vs_time(table: pd.DataFrame) -> bytes:
    """The speed/accuracy trade-off: median accuracy against median time, the Pareto front marked."""
    measured = table[(table["n"] > 0) & table["accuracy"].notna()].reset_index(drop=True)
    figure = Figure(figsize=(8, 5), layout="constrained")
    axis = figure.subplots()
    markers = _shapes(measured)
    for _, row in measured.iterrows():
        axis.scatter(
            float(row["median_s"]),
            float(row["accuracy"]),
            color=engine_color(str(row["engine"])),
            marker=markers[tuple(row[c] for c in CONFIG)][0],
            s=45,
            zorder=3,
        )
        axis.annotate(
            f"{row['epochs']}",
            (float(row["median_s"]), float(row["accuracy"])),
            fontsize=6,
            xytext=(4, 3),
            textcoords="offset points",
        )
    time_s = measured["median_s"].to_numpy(dtype=float)
    accuracy = measured["accuracy"].to_numpy(dtype=float)
    front = pareto_front(time_s, -accuracy)
    order = np.argsort(time_s[front])
    axis.step(
        time_s[front][order],
        accuracy[front][order],
        where="post",
        color="black",
        alpha=0.6,
        zorder=2,
        label="Pareto front (faster or more accurate than all others)",
    )
    axis.scatter(time_s[front], accuracy[front], s=160, facecolors="none", edgecolors="black", zorder=4)
    _engine_legend(axis, measured["engine"].unique())
    for marker, label in markers.values():
        axis.scatter([], [], color="gray", marker=marker, label=label)
    _label_panel(axis, "Speed vs accuracy (labels: epochs)", "median fit time (s)", "median accuracy")
    return png(figure)


def speedup_cost(speedups: pd.DataFrame, costs: pd.DataFrame) -> bytes:
    """Speedup over the single thread against total cores, one panel per epochs, COST marked."""
    measured = speedups[speedups["speedup"].notna()]
    epochs = sorted(measured["epochs"].dropna().unique())
    figure, axes = _panels(max(len(epochs), 1))
    for axis, epoch in zip(axes, epochs, strict=False):
        for engine, group in measured[measured["epochs"] == epoch].groupby("engine", sort=True):
            group = group.sort_values(["total_cores", "median_s"])
            color = engine_color(str(engine))
            cost_row = costs[(costs["engine"] == engine) & (costs["epochs"] == epoch)]
            cost = str(cost_row["cost"].iloc[0]) if len(cost_row) else NEVER
            axis.plot(
                group["total_cores"].astype(float),
                group["speedup"].astype(float),
                "o-",
                color=color,
                label=f"{shown(engine)} (COST {cost if cost == NEVER else cost + ' cores'})",
            )
            if len(cost_row) and not pd.isna(cost_row["cost_cores"].iloc[0]):
                axis.axvline(float(cost_row["cost_cores"].iloc[0]), color=color, linestyle=":", alpha=0.8)
        axis.axhline(1.0, color=engine_color(BASELINE_ENGINE), linestyle="--", label="single thread")
        _label_panel(axis, f"{epoch} epochs", "total cores", "speedup over one thread")
    figure.suptitle("Speedup over the single-thread baseline; dotted: COST")
    return png(figure)


def _label_panel(axis: Any, title: str, x_label: str, y_label: str) -> None:
    """A panel's title, axis labels, light grid and small legend, as every plot here has them."""
    axis.set_title(title)
    axis.set_xlabel(x_label)
    axis.set_ylabel(y_label)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7)


def time_vs_price(prices: pd.DataFrame) -> bytes:
    """Median time against median cost per measurement, the Pareto frontier marked, per epochs."""
    measured = prices[prices["n"] > 0]
    epochs = sorted(measured["epochs"].dropna().unique())
    figure, axes = _panels(max(len(epochs), 1))
    for axis, epoch in zip(axes, epochs, strict=False):
        group = measured[measured["epochs"] == epoch]
        for _, row in group.iterrows():
            axis.scatter(
                float(row["median_cost"]),
                float(row["median_s"]),
                color=engine_color(str(row["engine"])),
                edgecolors="black" if row["pareto"] else "none",
                linewidths=1.5,
                s=50,
                zorder=3,
            )
            axis.annotate(
                short_config(row),
                (float(row["median_cost"]), float(row["median_s"])),
                fontsize=6,
                xytext=(4, 3),
                textcoords="offset points",
            )
        front = group[group["pareto"].astype(bool)].sort_values("median_cost")
        axis.step(
            front["median_cost"].astype(float),
            front["median_s"].astype(float),
            where="post",
            color="black",
            alpha=0.6,
            label="Pareto frontier (ringed)",
        )
        _engine_legend(axis, group["engine"].unique())
        _label_panel(axis, f"{epoch} epochs", "median cost per measurement", "median fit time (s)")
    figure.suptitle("Time vs cost")
    return png(figure)


def time_by_configuration(arms: pd.DataFrame) -> bytes:
    """Median time with its 95 % CI per configuration, a colour per engine, one panel per ``panel`` value.

    ``arms`` columns: ``panel`` (title, e.g. the epochs), ``engine``, ``config`` (short label),
    ``median_s``, ``low_s``, ``high_s``, ``winner`` (ringed).
    """
    panels = list(dict.fromkeys(arms["panel"]))
    figure, axes = _panels(max(len(panels), 1), width_in=6.0)
    for axis, panel in zip(axes, panels, strict=False):
        group = arms[arms["panel"] == panel]
        configs = list(dict.fromkeys(group["config"]))
        engines = sorted(str(e) for e in group["engine"].unique())
        for offset, engine in enumerate(engines):
            mine = group[group["engine"] == engine]
            x = np.array([configs.index(c) for c in mine["config"]]) + (offset - (len(engines) - 1) / 2) * 0.15
            median = mine["median_s"].to_numpy(dtype=float)
            spread = np.vstack(
                [median - mine["low_s"].to_numpy(dtype=float), mine["high_s"].to_numpy(dtype=float) - median]
            )
            axis.errorbar(x, median, yerr=spread, fmt="o", capsize=4, color=engine_color(engine), label=shown(engine))
            won = mine["winner"].to_numpy(dtype=bool)
            axis.scatter(x[won], median[won], s=180, facecolors="none", edgecolors="black", zorder=4)
        axis.set_xticks(range(len(configs)), configs, fontsize=7)
        axis.set_xlim(-0.5, len(configs) - 0.5)
        axis.set_title(shown(panel))
        axis.set_ylabel("median fit time (s), 95 % CI")
        axis.grid(axis="y", alpha=0.3)
        axis.legend(fontsize=7)
    figure.suptitle("Time per configuration and engine (ringed: the recommendation)")
    return png(figure)


def memory_vs_granted(memory: pd.DataFrame) -> bytes:
    """Granted memory, measured peak and suggested limit per engine and configuration (horizontal bars).

    ``memory`` columns: ``engine``, ``config`` (short label), ``granted_gib``, ``peak_gib``, ``suggested_gib``.
    """
    measured = memory[memory["peak_gib"].notna()].reset_index(drop=True)
    figure = Figure(figsize=(8, 1.2 + 0.45 * max(len(measured), 1)), layout="constrained")
    axis = figure.subplots()
    y = np.arange(len(measured))
    colors = [engine_color(str(e)) for e in measured["engine"]]
    axis.barh(y, measured["granted_gib"].astype(float), color="#dddddd", edgecolor="#999999", label="granted")
    axis.barh(y, measured["peak_gib"].astype(float), height=0.4, color=colors, label="measured peak")
    axis.scatter(measured["suggested_gib"].astype(float), y, marker="|", s=300, color="black", label="suggested")
    axis.set_yticks(y, [f"{shown(e)} {c}" for e, c in zip(measured["engine"], measured["config"], strict=True)])
    axis.set_xlabel("memory per executor or worker (GiB)")
    axis.set_title("Peak memory vs granted memory (suggested: peak + 25 %)")
    axis.grid(axis="x", alpha=0.3)
    axis.legend(fontsize=7)
    return png(figure)


def predicted_vs_measured(table: pd.DataFrame) -> bytes:
    """Each configuration and epochs value's median batch time against what the plan predicted (log-log, y = x).

    ``table`` columns: ``engine``, ``predicted_s``, ``measured_s``.
    """
    figure = Figure(figsize=(5.5, 4.5), layout="constrained")
    axis = figure.subplots()
    for engine, rows in table.groupby("engine", sort=True):
        axis.scatter(rows["predicted_s"], rows["measured_s"], color=engine_color(str(engine)), label=shown(engine))
    values = pd.concat([table["predicted_s"], table["measured_s"]]).astype(float)
    low, high = float(values.min()) / 1.2, float(values.max()) * 1.2
    axis.plot([low, high], [low, high], color="#999999", linewidth=1, label="measured = predicted")
    axis.set_xscale("log")
    axis.set_yscale("log")
    _label_panel(axis, "Predicted vs measured median batch time", "predicted (s)", "measured (s)")
    return png(figure)

"""The report's figures are readable at the size report.html shows them (issue #35): no wider than its column,
text of a readable size, no overlapping labels, one order of configurations in every panel and figure, and no
axis for a quantity that does not vary (a sentence instead)."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.text import Text

from sweeper.results import statistics
from sweeper.results.report import plots, shape_plots
from sweeper.results.report.blocks import Paragraph, Picture
from sweeper.results.report.sections import configurations, scaling
from sweeper.store.parquet import load_sweep
from tests.fixtures.make_fixture_store import STORE
from tests.support.synthetic_stores import ArmSpec, synthetic_frame

HTML_COLUMN_PX = 1200 - 2 * 16  # render_html's body: max-width 1200px, padding 1em each side

ROWS = load_sweep(STORE)
TABLE = statistics.summary(ROWS)
SHAPES = ["5 executors x 6 cores x 19 GiB", "7 executors x 5 cores x 13 GiB", "9 executors x 4 cores x 11 GiB"]
FIGURES: dict[str, Callable[[], Figure]] = {
    "box_fit_time": lambda: shape_plots.box_fit_time(ROWS),
    "versus_epochs": lambda: plots.versus_epochs(TABLE),
    "accuracy_vs_time": lambda: plots.accuracy_vs_time(TABLE),
    "speedup_cost": lambda: plots.speedup_cost(statistics.speedup(ROWS), statistics.cost(ROWS)),
    "time_vs_price": lambda: plots.time_vs_price(statistics.price(ROWS, 2.0)),
}


def _arms(panels: dict[str, list[str]]) -> pd.DataFrame:
    """The answer figure's points: per panel, its configurations in the order given, both engines each."""
    shapes = {label: tuple(int(n) for n in label.split()[::3]) for label in SHAPES}  # executors, cores, memory
    rows = [
        {"panel": panel, "engine": engine, "config": label, "cores_per_executor": shapes[label][1],
         "executors": shapes[label][0], "executor_memory_gib": float(shapes[label][2]), "median_s": 10.0 + i,
         "low_s": 9.0 + i, "high_s": 11.0 + i, "winner": i == 0 and engine == "dask"}
        for panel, labels in panels.items() for i, label in enumerate(labels) for engine in ("dask", "spark")
    ]  # fmt: skip
    return pd.DataFrame(rows)


def _drawn(figure: Figure) -> Figure:
    FigureCanvasAgg(figure).draw()
    return figure


def _tick_labels(figure: Figure, axis: str) -> list[list[Text]]:
    """Each panel's visible, non-empty tick labels on ``axis`` ("x" or "y")."""
    return [
        [t for t in getattr(ax, f"get_{axis}ticklabels")() if t.get_visible() and t.get_text()]
        for ax in figure.axes
        if ax.get_visible()
    ]


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_a_figure_fits_the_page_and_its_text_is_readable(name: str) -> None:
    figure = _drawn(FIGURES[name]())
    assert figure.get_figwidth() <= plots.PAGE_WIDTH_IN
    texts = [t for t in figure.findobj(Text) if t.get_visible() and t.get_text()]
    assert texts and min(float(t.get_fontsize()) for t in texts) >= plots.SMALL_PT, name
    ticks = [t for panel in [*_tick_labels(figure, "x"), *_tick_labels(figure, "y")] for t in panel]
    assert ticks and min(float(t.get_fontsize()) for t in ticks) >= plots.TEXT_PT, name
    height_px, width_px = _png_size(plots.png(figure))
    assert width_px <= HTML_COLUMN_PX and height_px > 200


def _png_size(png: bytes) -> tuple[int, int]:
    """(height, width) in pixels from a PNG's header."""
    return int.from_bytes(png[20:24], "big"), int.from_bytes(png[16:20], "big")


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_no_two_tick_labels_overlap(name: str) -> None:
    figure = _drawn(FIGURES[name]())
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    for panel in [*_tick_labels(figure, "x"), *_tick_labels(figure, "y")]:
        boxes = [t.get_window_extent(renderer) for t in panel]
        for a, b in itertools.combinations(boxes, 2):
            assert not a.overlaps(b), (name, [t.get_text() for t in panel])


def test_every_panel_and_figure_orders_the_configurations_alike() -> None:
    arms = _arms({"10 epochs": SHAPES[::-1], "100 epochs": [SHAPES[1], SHAPES[0], SHAPES[2]]})  # winner first each
    answer = _drawn(shape_plots.time_by_configuration(arms))
    panels = answer.axes[:2]
    order = [t.get_text() for t in panels[0].get_yticklabels()]
    assert order == SHAPES  # fewer cores in all first
    assert panels[0].get_shared_y_axes().joined(*panels)  # one axis: a configuration at one height in both
    assert list(panels[1].get_yticks()) == list(panels[0].get_yticks()) and panels[1].get_ylim() == (2.5, -0.5)
    assert not [t for t in panels[1].get_yticklabels() if t.get_visible() and t.get_text()]  # written once
    bars = [[c for c in p.containers if isinstance(c, ErrorbarContainer)] for p in panels]
    dask_10, dask_100 = (next(c for c in mine if c.lines[0].get_color() == plots.engine_color("dask")) for mine in bars)
    winners = [float(np.asarray(dask.lines[0].get_ydata(), dtype=float)[0]) for dask in (dask_10, dask_100)]
    assert [round(y) for y in winners] == [2, 1]  # each panel's first point (its winner) at its shape's height
    boxes = _drawn(shape_plots.box_fit_time(ROWS))
    assert [t.get_text() for t in boxes.axes[0].get_yticklabels()] == ["1 thread (baseline)", *SHAPES]


def test_one_core_count_draws_no_speedup_axis_and_says_so() -> None:
    arms = [ArmSpec("spark", 1, 2, 2.0), ArmSpec("dask", 2, 1, 6.0), ArmSpec("local", 1, 1, 0.0, median_s=30.0)]
    blocks = scaling.speedup_blocks(synthetic_frame(arms, epochs=(10,), seed=1), "")
    assert not [b for b in blocks if isinstance(b, Picture)]
    assert (
        Paragraph(
            "Every configuration has 2 cores in all: no figure against total cores (scaling needs two core counts or "
            "more); the speedups are in the table above."
        )
        in blocks
    )
    figures = [b.name for b in configurations.time_blocks(synthetic_frame(arms, epochs=(10,), seed=1), "")
               if isinstance(b, Picture)]  # fmt: skip
    assert figures == ["fit_time_box.png", "accuracy_vs_time.png"]  # one epochs value: no figure against epochs


def test_one_epochs_value_is_said_instead_of_drawn() -> None:
    blocks = configurations.time_blocks(synthetic_frame([ArmSpec("dask", 2, 1, 6.0)], epochs=(10,), seed=1), "")
    assert Paragraph("Every measurement at 10 epochs: no figure against epochs.") in blocks


def test_a_regressors_figures_name_its_score_not_accuracy() -> None:
    """A regressor's sweep is scored by R^2 (#36): its figures' titles, axes and legends say so."""
    texts = [
        text.get_text()
        for figure in (
            plots.versus_epochs(TABLE, score="Score (r2)"),
            plots.accuracy_vs_time(TABLE, score="Score (r2)"),
        )
        for text in _drawn(figure).findobj(Text)
    ]
    assert "median score (r2)" in texts and "Score (r2) vs epochs" in texts, texts
    assert not [text for text in texts if "accura" in text.lower()], texts

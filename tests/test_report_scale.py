"""The report of a store of many configurations: figures draw each engine's fastest and say how many they leave out,
one table holds every configuration, the answer's sentences count what they do not name (issue #39)."""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from sweeper.results.report import plots, selection, shape_plots
from sweeper.results.report.content import Bullets, Paragraph, Picture, Rows, build_report
from tests.support.synthetic_stores import ArmSpec, synthetic_frame

SHAPES = [(cores, executors) for cores in (1, 2, 3, 4, 5) for executors in (1, 2, 3, 4, 5, 6)]  # 30 per engine
ARMS = [
    *(ArmSpec(engine, c, e, 4.0, median_s=10.0 + i / 4 + (engine == "spark"), spread=0.001, trials=2)
      for engine in ("spark", "dask") for i, (c, e) in enumerate(SHAPES)),
    ArmSpec("local", 1, 1, 0.0, median_s=60.0, trials=2, peak_gib=None),
]  # fmt: skip


@pytest.fixture(scope="module")
def drawn() -> dict[str, list[Any]]:
    """The report's blocks, and what each per-configuration figure was given to draw."""
    given: dict[str, list[Any]] = {}
    patch = pytest.MonkeyPatch()
    for module, name in (
        (shape_plots, "box_fit_time"),
        (plots, "versus_epochs"),
        (shape_plots, "time_by_configuration"),
        (plots, "memory_vs_granted"),
    ):
        original = getattr(module, name)

        def spy(table: pd.DataFrame, *args: Any, _name: str = name, _draw: Any = original) -> Figure:
            given[_name] = [table, *args]
            return cast(Figure, _draw(table, *args))

        patch.setattr(module, name, spy)
    try:
        frame = synthetic_frame(ARMS, epochs=(5, 50), seed=3)
        given["blocks"] = build_report(frame, cost_per_node_hour=2.0)
    finally:
        patch.undo()
    return given


def test_figures_draw_each_engines_fastest_and_say_how_many_are_left_out(drawn: dict[str, list[Any]]) -> None:
    boxes, note, axis = drawn["box_fit_time"]
    assert axis == "epochs"  # an MLP's store: the panels say epochs
    per_epochs = boxes.drop_duplicates(["epochs", "engine", "cores_per_executor", "executors"])
    assert per_epochs.groupby(["epochs", "engine"]).size().max() == selection.FIGURE_CONFIGURATIONS
    fastest_dask = per_epochs[(per_epochs["engine"] == "dask") & (per_epochs["epochs"] == 5)]
    shapes = zip(fastest_dask["cores_per_executor"], fastest_dask["executors"], strict=True)
    assert sorted(shapes) == sorted(SHAPES[:8])
    assert "each engine's 8 fastest configurations at each epochs value drawn; 44 of 61 left out" in note
    lines, _, axis, score = drawn["versus_epochs"]
    assert (axis, score) == ("epochs", "Accuracy")
    assert lines.groupby("engine").size().to_dict() == {"dask": 16, "local": 2, "spark": 16}  # 8 x 2 epochs
    arms, _ = drawn["time_by_configuration"]
    assert arms.groupby(["panel", "engine"]).size().max() == 8 and arms["winner"].sum() == 2
    memory, _ = drawn["memory_vs_granted"]
    assert memory.groupby("engine").size().to_dict() == {"dask": 8, "spark": 8}
    alts = [block.alt for block in drawn["blocks"] if isinstance(block, Picture)]
    assert sum("left out, every one in the tables" in alt for alt in alts) == 3
    assert any("fastest configurations in colour; 44 of 61 grey dots" in alt for alt in alts)


def test_one_table_holds_every_configuration(drawn: dict[str, list[Any]]) -> None:
    tables = [block for block in drawn["blocks"] if isinstance(block, Rows)]
    assert not [table for table in tables if table.caption.startswith("Config: ")]
    (every,) = [table for table in tables if table.caption.startswith("Every configuration")]
    assert every.caption == "Every configuration (30 shapes): a line per epochs value, fastest first"
    assert every.header[:3] == ("Config", "Cores in all", "# Epochs") and len(every.rows) == 60
    assert every.rows[0][:3] == ("1 executor x 1 core x 4 GiB", "1", "5")  # the fastest at 5 epochs first
    assert [line[2] for line in every.rows] == ["5"] * 30 + ["50"] * 30


def test_the_answer_names_its_winners_and_counts_the_others(drawn: dict[str, list[Any]]) -> None:
    texts = [block.text for block in drawn["blocks"] if isinstance(block, Paragraph)]
    (memory,) = [text for text in texts if text.startswith("Memory: ")]
    assert "other spark configuration(s) to right-size (granted 4 GiB, peak " in memory
    assert memory.count("granted 4 GiB, peak") < 10
    (bullets,) = [block for block in drawn["blocks"] if isinstance(block, Bullets) and "Dates" in block.items[1]]
    cluster = bullets.items[3]
    assert "30 configuration(s): 1 to 6 executors, 1 to 5 cores each, 4 GiB each (each in the tables)" in cluster


def test_fastest_ranks_by_mean_rank_within_each_scope() -> None:
    table = pd.DataFrame(
        {
            "engine": ["a"] * 6 + ["b"],
            "config": ["x", "y", "z"] * 2 + ["x"],
            "epochs": [1, 1, 1, 2, 2, 2, 1],
            "median_s": [1.0, 2.0, np.nan, 5.0, 3.0, 4.0, 9.0],
        }
    )
    overall = selection.fastest(table, limit=1, config=("config",))  # mean ranks: x 2, y 1.5, z 2.5
    assert table[overall]["config"].tolist() == ["y", "y", "x"]
    per_epochs = selection.fastest(table, limit=1, scope=("epochs",), config=("config",))
    assert table[per_epochs]["config"].tolist() == ["x", "y", "x"]
    assert selection.fastest(table.iloc[:0]).size == 0

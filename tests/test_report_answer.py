"""The report opens with "The answer": sentences, one table, the time figure and (when measured) the memory figure."""

from __future__ import annotations

from pathlib import Path

import matplotlib.image
import pandas as pd
import pytest

from sweeper.results import report
from sweeper.results.report.content import Paragraph, Picture, Rows
from sweeper.results.report.sections.answer import answer_blocks
from sweeper.store.parquet import load_sweep, write_rows
from tests.fixtures.make_fixture_store import STORE
from tests.support.synthetic_stores import ArmSpec, synthetic_frame, synthetic_rows

ARMS = [
    ArmSpec("spark", 2, 2, 8.0, median_s=10.0, peak_gib=1.0, jvm_heap_gib=0.8, python_gib=0.5),
    ArmSpec("dask", 2, 2, 8.0, median_s=15.0, peak_gib=1.0, slot_utilisation=0.3),
    ArmSpec("dask", 1, 4, 4.0, median_s=20.0, peak_gib=5.0),
    ArmSpec("local", 1, 1, 0.0, median_s=40.0, peak_gib=None),
]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("answer")
    write_rows(root / "store", "synthetic", synthetic_rows(ARMS, epochs=(5, 50), seed=1), "part-0")
    return report.write_report(root / "store", root / "out")


def test_markdown_and_html_open_with_the_answer(written: list[Path]) -> None:
    page, md = (path.read_text(encoding="utf-8") for path in written[:2])
    assert md.startswith("# sweeper report: synthetic\n\n## The answer\n\nSpark 2 executors x 2 cores x 8 GiB wins")
    assert md.index("## The answer") < md.index("## What was measured") < md.index("## Method")
    assert page.index("<h2>The answer</h2>") < page.index("<h2>What was measured</h2>")
    assert "(2 of 2 settled)" in md
    assert "5 epochs: spark faster (spark/dask 0.6" in md and "50 epochs: spark faster" in md


def test_the_answer_table_names_winner_runner_up_ratio_and_verdict(written: list[Path]) -> None:
    md = written[1].read_text(encoding="utf-8")
    assert "**The recommendation per epochs value**" in md
    lines = [line for line in md.splitlines() if line.startswith(("| 5 |", "| 50 |")) and " GiB | " in line]
    assert len(lines) == 2
    for line in lines:
        cells = [cell.strip() for cell in line.strip("|").split(" | ")]
        assert cells[1] == "spark 2 executors x 2 cores x 8 GiB"
        assert cells[3] == "dask 2 executors x 2 cores x 8 GiB"
        assert cells[4].startswith("1.") and cells[5] == "faster"


def test_memory_and_idle_slots_are_said_and_drawn(written: list[Path]) -> None:
    md = written[1].read_text(encoding="utf-8")
    assert "dask 4 executors x 1 core: granted 4 GiB, peak " in md and "suggested 6.5 GiB; more than granted" in md
    assert (
        "spark 2 executors x 2 cores: heap (spark.executor.memory) granted 8 GiB, peak 0.80 GiB, suggested 1 GiB"
        in (md)
    )
    assert "overhead (spark.executor.memoryOverhead) granted " in md and "peak 0.50 GiB, suggested 1 GiB" in md
    assert "hold 4 executors of 1 core(s) instead of 2 of 2" in md
    assert "Slots left idle: dask 2 executors x 2 cores (30% used: GIL-bound threads" in md
    names = [path.name for path in written[2:]]
    assert names[:2] == ["answer_time.png", "answer_memory.png"]
    assert "](answer_time.png)" in md and "](answer_memory.png)" in md
    for path in written[2:4]:
        height, width, _ = matplotlib.image.imread(path).shape
        assert height > 100 and width > 300


def test_a_store_without_memory_figures_gets_no_memory_figure() -> None:
    frame = load_sweep(STORE)
    blocks = answer_blocks(frame)
    assert [b.name for b in blocks if isinstance(b, Picture)] == ["answer_time.png"]
    assert Paragraph("Memory was not measured in this sweep: no right-sizing.") in blocks
    (table,) = [b for b in blocks if isinstance(b, Rows)]
    assert [line[0] for line in table.rows] == ["10", "100"] and table.header[0] == "# Epochs"


def test_only_a_baseline_gives_no_answer_and_no_figure() -> None:
    blocks = answer_blocks(synthetic_frame(ARMS[3:], seed=1))
    assert not [b for b in blocks if isinstance(b, Picture | Rows)]
    assert Paragraph("No answer: no ok measurement of an engine.") in blocks


def test_several_workloads_get_a_workload_column() -> None:
    frame = pd.concat([synthetic_frame(ARMS, seed=1), synthetic_frame(ARMS, seed=2, n_train=500)], ignore_index=True)
    (table,) = [b for b in answer_blocks(frame) if isinstance(b, Rows)]
    assert table.header[0] == "Workload" and len(table.rows) == 2
    assert sorted(line[0].split(", ")[1] for line in table.rows) == ["n_train=1347", "n_train=500"]

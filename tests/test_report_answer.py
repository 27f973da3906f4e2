"""The report opens with "The answer": recommend's words, one table, the time figure and (when measured) the memory
figure; memory advice that never contradicts what was measured, and none from a dry run."""

from __future__ import annotations

from pathlib import Path

import matplotlib.image
import pandas as pd
import pytest

from sweeper.results import recommend, report
from sweeper.results import recommend_view as view
from sweeper.results.report.content import Block, Bullets, Paragraph, Picture, Rows
from sweeper.results.report.sections.answer import answer_blocks
from sweeper.results.right_sizing import DRY_RUN_NOTE, memory_advice
from sweeper.store.parquet import load_sweep
from tests.fixtures.make_fixture_store import STORE
from tests.support.stored_rows import write_test_rows
from tests.support.synthetic_stores import ArmSpec, synthetic_frame, synthetic_rows, to_frame

ARMS = [
    ArmSpec("spark", 2, 2, 8.0, median_s=10.0, peak_gib=1.0, jvm_heap_gib=0.8, python_gib=0.5),
    ArmSpec("dask", 2, 2, 8.0, median_s=15.0, peak_gib=1.0, slot_utilisation=0.3),
    ArmSpec("dask", 1, 4, 4.0, median_s=20.0, peak_gib=5.0),
    ArmSpec("local", 1, 1, 0.0, median_s=40.0, peak_gib=None),
]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("answer")
    write_test_rows(root / "store", "synthetic", synthetic_rows(ARMS, epochs=(5, 50), seed=1), "part-0")
    return report.write_report(root / "store", root / "out")


def test_markdown_and_html_open_with_the_answer(written: list[Path]) -> None:
    page, md = (path.read_text(encoding="utf-8") for path in written[:2])
    assert md.startswith("# sweeper report: synthetic\n\n## The answer\n\nSpark 2 executors x 2 cores x 8 GiB wins")
    assert md.index("## The answer") < md.index("## What was measured") < md.index("## Method")
    assert page.index("<h2>The answer</h2>") < page.index("<h2>What was measured</h2>")
    assert "(2 of 2 settled)" in md
    assert "Spark vs Dask (each engine's best configuration):" in md
    assert "spark/dask 0.6" in md and ": spark faster\n- 50 epochs: spark " in md


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


def _said(blocks: list[Block]) -> list[str]:
    """The answer's text, a paragraph or a bullet a line."""
    lines: list[str] = []
    for block in blocks:
        if isinstance(block, Paragraph):
            lines.append(block.text)
        elif isinstance(block, Bullets):
            lines += block.items
    return lines


def test_the_answer_says_what_recommend_says_one_thread_and_what_was_not_measured() -> None:
    quick_baseline = [*ARMS[:3], ArmSpec("local", 1, 1, 0.0, median_s=2.0, peak_gib=None)]
    rows = synthetic_rows(quick_baseline, epochs=(5, 50), seed=1)
    failed = synthetic_rows([ArmSpec("spark", 1, 4, 4.0)], epochs=(5,), seed=2)  # never ok: an interrupted launch
    for row in failed:
        row.update(status="failed", fit_wall_s=None, accuracy=None, error="the launch was interrupted")
    frame = to_frame([*rows, *failed])
    found = recommend.recommend(frame)
    said = _said(answer_blocks(frame))
    printed = view.answer_lines(found)
    overall = next(line for line in printed if line.startswith("Overall: "))
    assert "one thread on no cluster was faster at every epochs value" in overall
    headline = f"{overall.removeprefix('Overall: ')} ({view.SETTLED_MEANS})."
    assert said[0] == headline[:1].upper() + headline[1:]
    for line in printed:
        if not line.startswith(("Overall: ", f"  ({view.SETTLED_MEANS[:20]}")):
            assert line.strip() in said, line
    assert "Not measured (left out of the answer above):" in said
    assert "spark 4 executors x 1 core x 4 GiB at 5 epochs: failed: the launch was interrupted" in said


def test_memory_advice_never_proposes_a_shape_the_sweep_measured() -> None:
    both = [ArmSpec("dask", 2, 1, 6.0, median_s=5.0, peak_gib=0.3), ArmSpec("dask", 1, 2, 2.0, median_s=6.0)]
    advice = {(a.executors, a.cores_per_executor): a for a in memory_advice(synthetic_frame(both, seed=1))}
    winner = advice[(1, 2)]  # its memory holds 2 executors of 1 core: the runner-up, measured and slower
    assert winner.limit == "more executors fit" and winner.alternative == (2, 1)
    assert "a shape this sweep measured (dask 2 executors x 1 core): the answer says how the two compare" in winner.note
    alone = memory_advice(synthetic_frame(both[:1], seed=1))[0]  # never measured: proposed
    assert alone.note.startswith("a node's memory and cores then hold 2 executors of 1 core(s)")


def test_a_dry_runs_memory_is_not_advice_for_the_real_cluster() -> None:
    frame = synthetic_frame(ARMS, seed=1, dry_run=True)
    assert all(m.limit == "not measured" and m.note == DRY_RUN_NOTE for m in memory_advice(frame))
    blocks = answer_blocks(frame)
    assert Paragraph(f"Memory: {DRY_RUN_NOTE}.") in blocks
    assert [b.name for b in blocks if isinstance(b, Picture)] == ["answer_time.png"]  # no peaks drawn

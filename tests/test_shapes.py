"""One shape, one spelling: every view writes configuration A (7 executors of 5 cores, 13 GiB) alike."""

from __future__ import annotations

import re
from typing import cast

import pytest
from rich.console import Console

from sweeper.launch.base import Granted, LaunchError, check_granted
from sweeper.results import statistics
from sweeper.results.recommend_view import memory_sentence
from sweeper.results.report import plots
from sweeper.results.right_sizing import memory_advice
from sweeper.run.view import measurement_line, summary_table
from sweeper.shapes import shape_text
from sweeper.store.parquet import load_results
from sweeper.store.row import Row
from tests.fixtures.make_fixture_store import STORE

A = "7 executors x 5 cores x 13 GiB"
OLD_SPELLINGS = re.compile(r"\d+x\d+c|\d+c x \d|\d+ cores, \d+ executors|\d+ cores? x \d+:|\b1 cores\b|\b1 executors\b")


def rendered(renderable: object) -> str:
    console = Console(width=200, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text()


@pytest.fixture(scope="module")
def rows_a() -> list[Row]:
    df = load_results(STORE)
    picked = df[(df["engine"] != "local") & (df["cores_per_executor"] == 5) & (df["status"] == "ok")]
    started = {
        "cluster_start_s": 1.0,
        "epochs_run": 10,
        "mode": "independent",
    }  # what a live row has, and the store not
    return [cast(Row, {**row, **started}) for row in picked.to_dict("records")]


def test_every_view_writes_a_shape_the_same_way(rows_a: list[Row]) -> None:
    row = rows_a[0]
    assert shape_text(7, 5, 13.0) == A
    assert A in str(measurement_line(row))
    assert statistics.config_label(5, 7, 13.0) == A
    assert plots.short_config(row) == A
    with pytest.raises(LaunchError, match=f"granted {A}, planned 8 executors x 5 cores x 13 GiB"):
        check_granted(Granted(8, 5, 13 * 1024), Granted(7, 5, 13 * 1024), "spark")
    summary = rendered(summary_table(rows_a))
    assert "7 executors x 5 cores" in summary
    for text in (summary, str(measurement_line(row))):
        assert not OLD_SPELLINGS.search(text), text


def test_counts_agree_with_their_nouns() -> None:
    assert shape_text(1, 1, 2.0) == "1 executor x 1 core x 2 GiB"
    assert shape_text(2, 1) == "2 executors x 1 core"
    assert shape_text(None, float("nan"), float("nan")) == "? executors x ? cores x ? GiB"


def test_memory_advice_names_the_shape_in_the_same_order() -> None:
    df = load_results(STORE)
    sentences = [memory_sentence(advice) for advice in memory_advice(df)]
    assert any(sentence.startswith(f"dask {A.rsplit(' x ', 1)[0]}:") for sentence in sentences)
    assert not any(OLD_SPELLINGS.search(sentence) for sentence in sentences)

"""#37: compare, the report's engine section and predict on a three-engine store (Spark, Dask, Ray).

Most stores are synthetic but real: their rows are drawn by tests/support/synthetic_stores.py and written as
Parquet by the store's own writer, then read back by ``load_sweep`` and the ``sweeper`` CLI. One integration test
runs a real local sweep of the three engines (about a minute on 2 cores) through the same commands.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from sweeper.cli import main as sweeper_main
from sweeper.results import report
from sweeper.results.report.blocks import Heading, Paragraph, Rows
from sweeper.results.report.sections.engines import engine_blocks, engine_pairs
from sweeper.store.parquet import load_sweep
from tests.conftest import minimal_grid, run_cli
from tests.support.stored_rows import write_test_rows
from tests.support.synthetic_stores import ArmSpec, synthetic_rows

SHAPES = ((1, 2, 2.0), (2, 2, 4.0), (1, 4, 4.0))  # three configurations: predict validates each engine
MEDIANS = {"spark": 12.0, "dask": 9.0, "ray": 6.0}


def _store(tmp_path: Path, engines: tuple[str, ...]) -> Path:
    """A store of one sweep with every shape of :data:`SHAPES` on each of ``engines`` (ray the fastest)."""
    arms = [ArmSpec(engine, *shape, median_s=MEDIANS[engine] * shape[0]) for engine in engines for shape in SHAPES]
    store = tmp_path / "-".join(engines)
    write_test_rows(store, "synthetic", synthetic_rows(arms, epochs=(5, 10), seed=3), "part-0")
    return store


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    return load_sweep(_store(tmp_path_factory.mktemp("three"), ("spark", "dask", "ray")))


def test_compare_prints_each_pair_of_engines_and_spark_vs_dask_as_a_two_engine_store(
    three: pd.DataFrame, tmp_path: Path
) -> None:
    assert engine_pairs(three) == [("spark", "dask"), ("spark", "ray"), ("dask", "ray")]
    text = report.compare_text(three, width=200)
    titles = [line.strip() for line in text.splitlines() if "median fit time over ok trials" in line]
    assert titles == [
        f"{pair}: median fit time over ok trials" for pair in ("Spark vs Dask", "Spark vs Ray", "Dask vs Ray")
    ]
    assert "Ray time (s)" in text and "Dask/Ray [95 % CI]" in text and "ray faster" in text
    two = report.compare_text(load_sweep(_store(tmp_path, ("spark", "dask"))), width=200)
    assert text.startswith(two)  # the two-engine case, unchanged


def test_the_compare_command_reads_the_three_engine_store(tmp_path: Path) -> None:
    done = run_cli("compare", str(_store(tmp_path, ("spark", "dask", "ray"))), columns=200)
    assert done.returncode == 0, done.stderr
    assert " ".join(done.stdout.split()).count("median fit time over ok trials") == 3


def test_the_report_section_has_a_table_per_pair(three: pd.DataFrame) -> None:
    blocks = engine_blocks(three)
    assert blocks[0] == Heading("Spark vs Dask vs Ray", level=3)
    tables = [block for block in blocks if isinstance(block, Rows)]
    assert [table.caption for table in tables] == [
        f"Same configuration and epochs, {pair}" for pair in ("Spark vs Dask", "Spark vs Ray", "Dask vs Ray")
    ]
    assert tables[2].header[2:5] == ("Dask time (s)", "Ray time (s)", "Dask/Ray [95 % CI]")
    assert len(tables[2].rows) == len(SHAPES) * 2  # every shape and epochs value


def test_dask_and_ray_alone_are_compared(tmp_path: Path) -> None:
    blocks = engine_blocks(load_sweep(_store(tmp_path, ("dask", "ray"))))
    assert blocks[0] == Heading("Dask vs Ray", level=3)
    assert not any(isinstance(block, Paragraph) for block in blocks)


def test_one_engine_is_not_compared(tmp_path: Path) -> None:
    blocks = engine_blocks(load_sweep(_store(tmp_path, ("ray",))))
    assert blocks == [Heading("Spark vs Dask", level=3), Paragraph("Not both engines measured (engines: ray).")]


def test_predict_models_every_joblib_engine_ray_included(
    tmp_path: Path, write_grid: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _store(tmp_path, ("spark", "dask", "ray"))
    grid = write_grid(
        minimal_grid(
            engines=["spark", "dask", "ray"],
            cluster={"manager": "local", "nodes": 1, "cores_per_node": 4, "memory_per_node": "16GiB"},
            sizing={"cores_per_executor": [1, 2], "reserve": {"cores": 0, "memory": "1GiB"}, "application_master": 0},
            workload={"dataset": "digits", "epochs": [10], "trials": 1, "n_fits": 8},
        )
    )
    assert sweeper_main(["predict", str(store), "--grid", str(grid), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert set(document["models"]) == {"spark", "dask", "ray"}
    assert set(document["validation_by_engine"]) == {"spark", "dask", "ray"}
    predicted = {p["engine"]: p["predicted_median_s"] for p in document["predictions"] if p["cores_per_executor"] == 1}
    assert predicted["ray"] < predicted["dask"] < predicted["spark"]  # as the rows were drawn


@pytest.mark.integration
def test_a_real_three_engine_sweep_is_compared_reported_and_predicted(tmp_path: Path) -> None:
    grid = minimal_grid(name="three", store=str(tmp_path / "store"), engines=["spark", "dask", "ray"], baseline=False)
    grid["workload"] = {"dataset": "digits", "epochs": [3], "trials": 3, "n_fits": 4}
    (tmp_path / "three.yaml").write_text(yaml.safe_dump(grid))
    done = run_cli("run", str(tmp_path / "three.yaml"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(load_sweep(tmp_path / "store")["engine"]) == {"spark", "dask", "ray"}
    compared = run_cli("compare", str(tmp_path / "store"), columns=200)
    titles = [line.strip() for line in compared.stdout.splitlines() if "median fit time over ok trials" in line]
    assert titles == [
        f"{pair}: median fit time over ok trials" for pair in ("Spark vs Dask", "Spark vs Ray", "Dask vs Ray")
    ]
    reported = run_cli("report", str(tmp_path / "store"), "--out", str(tmp_path / "report"))
    assert reported.returncode == 0, reported.stderr
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "### Spark vs Dask vs Ray" in markdown and "**Same configuration and epochs, Dask vs Ray**" in markdown
    predicted = run_cli("predict", str(tmp_path / "store"), "--validate")
    assert predicted.returncode == 0, predicted.stderr
    assert [line.split(":")[0] for line in predicted.stdout.splitlines()] == ["spark", "dask", "ray"]

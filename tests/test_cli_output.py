"""The command line on hostile paths, names and stores: exit 0 or 2, an ``error:`` line, never a traceback.

User text (grid, dataset, store and ``--out`` paths, sweep names, error messages) is printed as
written: ``[bold]``, ``[/]`` and ``:smile:`` are not read as console markup or emoji codes. A store
that cannot be written stops ``sweeper run`` before any data is loaded or anything starts, and
before ``--fresh`` deletes anything.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, cast

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from rich.console import Console

from sweeper.cli import main
from sweeper.planning.view import warning_line
from sweeper.run import launches, runner
from sweeper.run.view import measurement_line, summary_table
from sweeper.store.parquet import COLUMNS, SCHEMA_VERSION
from sweeper.store.row import Row
from tests.conftest import REPO, minimal_grid
from tests.fixtures.make_fixture_store import STORE, fixture_rows
from tests.support.budget_stores import write_store
from tests.support.stored_rows import write_test_rows
from tests.support.synthetic_stores import ArmSpec, synthetic_rows
from tests.support.whatif_stores import DASK, SPARK, law_rows

MARKUP = "[bold]n[red]:smile:"  # a tag, a style, an emoji code: all must show as written


def flat(text: str) -> str:
    """Output with its line wrapping undone."""
    return " ".join(text.split())


def write_grid(path: Path, **overrides: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(minimal_grid(**overrides), sort_keys=False))
    return path


def exits(code: int, argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """Run the CLI in-process; assert its exit code and that no traceback was printed; (stdout, stderr)."""
    assert main(argv) == code, capsys.readouterr()
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    if code == 2:
        assert err.startswith("error: "), err
    return out, err


@pytest.fixture
def no_launch(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records (and refuses) any launch start or data load of ``sweeper run``."""
    calls: list[str] = []

    def refuse(what: str) -> Any:
        def called(*args: Any, **kwargs: Any) -> Any:
            calls.append(what)
            raise AssertionError(f"{what} was called")

        return called

    monkeypatch.setattr(launches, "starter", refuse("starter"))
    monkeypatch.setattr(runner, "load_data", refuse("load_data"))
    return calls


# -- markup in paths and names ----------------------------------------------------------------------------


def test_plan_prints_markup_in_the_grid_path_and_name_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grid = write_grid(tmp_path / "[bold]x[/]" / "g:smile:.yaml", name=MARKUP)
    out, _ = exits(0, ["plan", str(grid)], capsys)
    assert flat(out).startswith(f"{MARKUP} ({grid}): manager local")


def test_a_refused_name_with_markup_is_printed_as_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    grid = write_grid(tmp_path / "[red]" / "g.yaml", name="a[/]b")
    _, err = exits(2, ["plan", str(grid)], capsys)
    assert f"error: {grid}: name: " in flat(err) and "got 'a[/]b'" in err


def test_run_report_and_compare_print_markup_in_paths_and_names_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real (baseline-only, one fit) dry run into a store at a markup path, then its report and table."""
    grid = write_grid(tmp_path / "[bold]x[/]" / "g.yaml", name=MARKUP, exclude=[{"engine": ["spark", "dask"]}])
    store = tmp_path / "[x]:smile:"
    out, _ = exits(0, ["run", str(grid), "--dry-run", "--store", f"{store}/"], capsys)
    assert f"dry run {MARKUP}-dry-run: 1 measurement in 1 launch" in flat(out)
    assert f"1 row written to {store / MARKUP}-dry-run, 0 not ok" in flat(out)
    assert (store / f"{MARKUP}-dry-run").is_dir()

    report_dir = tmp_path / "[y]" / "[/]"
    out, _ = exits(0, ["report", str(store), "--out", str(report_dir)], capsys)
    assert out.splitlines()[:2] == [str(report_dir / "report.html"), str(report_dir / "report.md")]
    assert (report_dir / "report.md").read_text(encoding="utf-8").startswith("# sweeper report: \\[bold\\]n\\[red\\]")

    out, _ = exits(0, ["compare", str(store), "--sweep", f"{MARKUP}-dry-run"], capsys)
    assert "Spark vs Dask" in out
    _, err = exits(2, ["compare", str(store), "--sweep", "[nope]"], capsys)
    assert f"no sweep '[nope]'; the store holds: {MARKUP}" in flat(err)


def test_error_rows_and_warnings_show_their_text_as_written_on_any_console() -> None:
    """Markup, emoji codes and a terminal escape sequence in an error message: shown, not obeyed."""
    row: dict[str, object] = {
        "status": "failed",
        "engine": "spark",
        "mode": "replicas",
        "executors": 2,
        "cores_per_executor": 1,
        "executor_memory_gib": 2.0,
        "epochs": 5,
        "trial": 0,
        "error_type": "Py4JJavaError",
        "error": "[/] [bold]boom :smile: \x1b[31mred",
    }
    buffer = io.StringIO()
    console = Console(file=buffer, width=300, color_system=None)  # markup and emoji on, as rich's default
    console.print(measurement_line(cast(Row, row)))
    console.print(warning_line("dataset [/]x :smile:"))
    text = buffer.getvalue()
    assert "Py4JJavaError: [/] [bold]boom :smile: \\x1b[31mred" in text and "\x1b" not in text
    assert "warning: dataset [/]x :smile:" in text


def test_a_runs_lines_and_summary_name_the_work_axis_of_the_rows() -> None:
    """An MLP's rows (and a store's from before estimators) say epochs; a forest's, n_estimators."""
    mlp: dict[str, object] = {"status": "ok", "engine": "dask", "mode": "replicas", "executors": 2,
                              "cores_per_executor": 1, "executor_memory_gib": 2.0, "epochs": 5, "trial": 0,
                              "fit_wall_s": 1.5, "accuracy": 0.9, "estimator": "sklearn.neural_network.MLPClassifier",
                              "work_axis": "max_iter"}  # fmt: skip
    forest = {**mlp, "estimator": "sklearn.ensemble.RandomForestClassifier", "work_axis": "n_estimators"}
    before = {key: value for key, value in mlp.items() if key not in ("estimator", "work_axis")}
    assert [measurement_line(cast(Row, row)).plain for row in (mlp, before)] == [
        "     ok dask   replicas 2 executors x 1 core x 2 GiB     5 epochs trial 0  fit 1.50 s  acc 0.9000"
    ] * 2
    assert "2 GiB n_estimators 5 trial 0  fit 1.50 s" in measurement_line(cast(Row, forest)).plain
    for rows, header in (([mlp], "epochs"), ([forest, forest], "n_estimators"), ([mlp, forest], "epochs")):
        buffer = io.StringIO()
        Console(file=buffer, width=200, color_system=None).print(summary_table([cast(Row, row) for row in rows]))
        assert f" {header} " in buffer.getvalue().splitlines()[2], (header, buffer.getvalue())


def test_a_runs_lines_and_summary_name_the_score_the_sweep_used() -> None:
    """A regressor's rows hold R^2 in their accuracy column: the line and the summary say r2, not acc."""
    regressor: dict[str, object] = {"status": "ok", "engine": "dask", "mode": "replicas", "executors": 2,
                                    "cores_per_executor": 1, "executor_memory_gib": 2.0, "epochs": 50, "trial": 0,
                                    "fit_wall_s": 1.5, "accuracy": 0.41, "scoring": "r2",
                                    "estimator": "sklearn.linear_model.Ridge", "work_axis": "max_iter"}  # fmt: skip
    assert measurement_line(cast(Row, regressor)).plain.endswith("fit 1.50 s  r2 0.4100")
    classifier = {**regressor, "scoring": "accuracy"}
    for rows, header in (([regressor], "r2"), ([classifier], "accuracy"), ([regressor, classifier], "score")):
        buffer = io.StringIO()
        Console(file=buffer, width=200, color_system=None).print(summary_table([cast(Row, row) for row in rows]))
        assert buffer.getvalue().splitlines()[2].rstrip(" ┃").endswith(f" {header}"), (header, buffer.getvalue())


# -- output fits 100 columns ------------------------------------------------------------------------------------

WIDEST = 100  # the widest line the command line prints to a pipe, and on a wider terminal wraps text at


@pytest.mark.parametrize("columns", [None, "200"], ids=["a-pipe", "a-wide-terminal"])
def test_grid_errors_and_predicts_lines_fit_100_columns_with_nothing_lost(
    columns: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Problems naming file, key, value and allowed values, and predict's model and validation lines: every line
    at most 100 columns, a problem's lines after its first indented, every word of it still there."""
    monkeypatch.chdir(tmp_path)  # the grid named bad.yaml: its path the same length on any machine
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    forest = {"dataset": "digits", "estimator": "sklearn.ensemble.RandomForestClassifier", "scoring": "acuracy",
              "model": {"max_depht": 8}, "iterations": {"parameter": "n_estimator", "values": [5]}}  # fmt: skip
    sizing = {**minimal_grid()["sizing"], "rulez": 1}
    write_grid(tmp_path / "bad.yaml", sizing=sizing, workload=forest)
    _, err = exits(2, ["plan", "bad.yaml"], capsys)
    lines = err.splitlines()
    assert max(map(len, lines)) <= WIDEST, err
    assert sum(line.startswith("error: bad.yaml: ") for line in lines) == 4, err
    assert all(line.startswith(("error: bad.yaml: ", "  ")) for line in lines), err
    said = flat(err)
    assert "did you mean 'rule'? (allowed: rule, cores_per_executor, reserve, application_master)" in said
    assert "(allowed: bootstrap, ccp_alpha, class_weight, criterion, max_depth, max_features," in said
    assert "has no parameter 'n_estimator'" in said and "got 'acuracy'; did you mean 'accuracy'?" in said

    write_store(tmp_path / "store", law_rows({"spark": SPARK, "dask": DASK}))
    cluster = {"manager": "local", "nodes": 1, "cores_per_node": 13, "memory_per_node": "64GiB"}
    sizing = {"cores_per_executor": [2, 6], "reserve": {"cores": 1, "memory": "1GiB"}, "application_master": 0}
    workload = {"dataset": "digits", "epochs": [10, 100], "n_fits": 24}
    write_grid(tmp_path / "other.yaml", cluster=cluster, sizing=sizing, workload=workload)
    out, _ = exits(0, ["predict", "store", "--grid", "other.yaml"], capsys)
    assert max(map(len, out.splitlines())) <= WIDEST, out
    said = flat(out)
    assert "spark: one fit = " in out and "\n  batch = " in out and "\n  peak = " in out, out  # a line each
    assert "x epochs x rows/1e6" in said and "x waves x one fit [12 medians]" in said
    assert "median error" in said and "over 12 configuration-points (good enough to name shapes worth" in said
    assert said.count("│ spark │") == said.count("│ dask │") == 4  # 2 shapes x 2 epochs, the table's cells wrapped


# -- the store is checked before anything starts --------------------------------------------------------------


@pytest.fixture
def read_only_store(tmp_path: Path) -> Iterator[Path]:
    """A store holding one file of sweep ``t`` that this process really cannot write.

    Root ignores file modes, so as root it is a read-only bind mount (what a read-only NFS or
    container volume is); otherwise a directory of mode 0555.
    """
    source = tmp_path / "source"
    write_test_rows(source, "t", [fixture_rows()[0]], "part-old")
    target = tmp_path / "read-only"
    if os.geteuid() != 0:
        for path in (source / "t", source):
            path.chmod(0o555)
        yield source
        for path in (source, source / "t"):
            path.chmod(0o755)
        return
    target.mkdir()
    if shutil.which("mount") is None or subprocess.run(["mount", "--bind", source, target]).returncode:
        pytest.skip("cannot bind-mount here (a read-only store needs mount as root, or a non-root user)")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", target], check=True)
        yield target
    finally:
        subprocess.run(["umount", target], check=True)


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        pytest.param("file", "Not a directory", id="store-is-a-file"),
        pytest.param("file-in-the-way", "a file that is not a directory is in the way", id="sweep-dir-is-a-file"),
        pytest.param("proc", "No such file or directory", id="under-proc"),
        pytest.param("long-name", "File name too long", id="300-character-name"),
    ],
)
def test_an_unusable_store_stops_run_before_anything_starts(
    case: str, reason: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_launch: list[str]
) -> None:
    grid = write_grid(tmp_path / "g.yaml")
    (tmp_path / "file").write_text("not a store")
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "t").write_text("not a sweep")
    store = {
        "file": tmp_path / "file",
        "file-in-the-way": tmp_path / "store",
        "proc": Path("/proc/sweeper-store"),
        "long-name": tmp_path / ("x" * 300),
    }[case]
    _, err = exits(2, ["run", str(grid), "--store", str(store), "--fresh"], capsys)
    assert f"error: store {store}: cannot create and write the sweep directory {store / 't'}: {reason}" in flat(err)
    assert no_launch == []
    assert (tmp_path / "file").read_text() == "not a store" and (tmp_path / "store" / "t").read_text() == "not a sweep"


def test_a_read_only_store_stops_run_and_fresh_deletes_nothing(
    read_only_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_launch: list[str]
) -> None:
    with pytest.raises(OSError):  # the fixture is what it claims to be
        (read_only_store / "t" / "probe").write_text("x")
    grid = write_grid(tmp_path / "g.yaml")
    _, err = exits(2, ["run", str(grid), "--store", str(read_only_store), "--fresh"], capsys)
    assert f"error: store {read_only_store}: cannot create and write the sweep directory" in flat(err)
    assert ("Read-only file system" if os.geteuid() == 0 else "Permission denied") in flat(err)
    assert no_launch == []
    assert [p.name for p in (read_only_store / "t").iterdir()] == ["part-old.parquet"]


@pytest.mark.parametrize("name", ["..", "."])
def test_a_sweep_named_dot_or_dot_dot_deletes_nothing_outside_its_sweep(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_launch: list[str]
) -> None:
    store = tmp_path / "parent" / "store"
    planted = [
        write_test_rows(tmp_path / "parent", "beside", [fixture_rows()[0]], "next-to-the-store"),
        write_test_rows(store, "other", [fixture_rows()[0]], "another-sweep"),
    ]
    shutil.copy(planted[0], tmp_path / "parent" / "in-the-parent.parquet")
    grid = write_grid(tmp_path / "g.yaml", name=name)
    _, err = exits(2, ["run", str(grid), "--store", str(store), "--fresh"], capsys)
    assert f"got '{name}'" in err
    assert all(path.exists() for path in [*planted, tmp_path / "parent" / "in-the-parent.parquet"])
    assert no_launch == []


@pytest.mark.parametrize("command", ["report", "compare"])
@pytest.mark.parametrize("name", ["..", ".", "a/b", "-x"])
def test_report_and_compare_refuse_a_sweep_that_is_no_directory_name(
    command: str, name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = ["--out", str(tmp_path / "out")] if command == "report" else []
    _, err = exits(2, [command, str(STORE), f"--sweep={name}", *extra], capsys)
    assert "sweep name must be one directory name" in flat(err)
    assert not (tmp_path / "out").exists()


# -- report --out and broken store files --------------------------------------------------------------------


def test_report_out_that_is_a_file_is_an_error_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "[o]" / "report.html"
    out.parent.mkdir()
    out.write_text("mine")
    _, err = exits(2, ["report", str(STORE), "--out", str(out)], capsys)
    assert f"error: {out}: exists and is not a directory" in flat(err)
    assert out.read_text() == "mine" and list(out.parent.iterdir()) == [out]


def wrong_type(path: Path) -> str:
    table = pq.read_table(path)
    index = COLUMNS.index("fit_wall_s")
    pq.write_table(table.set_column(index, "fit_wall_s", table.column(index).cast(pa.string())), path)
    return "not a sweeper store file (column fit_wall_s is string, not double)"


def link_to_itself(path: Path) -> str:
    path.unlink()
    path.symlink_to(path)
    return "cannot be read: Too many levels of symbolic links"


def newer_schema(path: Path) -> str:
    table = pq.read_table(path)
    newer = pa.array([SCHEMA_VERSION + 1] * table.num_rows, pa.int32())
    pq.write_table(table.set_column(0, "schema_version", newer), path)
    return f"written by a newer sweeper (schema {SCHEMA_VERSION + 1}, this one reads up to {SCHEMA_VERSION})"


@pytest.mark.parametrize("breakage", [wrong_type, link_to_itself, newer_schema])
def test_a_broken_store_file_is_named_and_other_sweeps_still_report(
    breakage: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "[s]"
    shutil.copytree(STORE, store)
    rows: list[Mapping[str, Any]] = [*fixture_rows(sweep="other")]
    broken = write_test_rows(store, "other", rows, "part-other")
    problem = breakage(broken)
    report_other = ["report", str(store), "--sweep", "other", "--out", str(tmp_path / "no")]
    for argv in (["compare", str(store), "--sweep", "other"], report_other):
        _, err = exits(2, argv, capsys)
        assert f"error: {broken}: {problem}" in flat(err)
    assert not (tmp_path / "no").exists()
    exits(0, ["compare", str(store), "--sweep", "fixture"], capsys)
    out, _ = exits(0, ["report", str(store), "--sweep", "fixture", "--out", str(tmp_path / "out")], capsys)
    assert str(tmp_path / "out" / "report.md") in out.splitlines() and (tmp_path / "out" / "report.md").exists()
    # without --sweep, the sweeps are listed by directory: the broken file is not read to name them
    _, err = exits(2, ["compare", str(store)], capsys)
    assert "holds 2 sweeps: fixture, other; pass one with --sweep NAME" in flat(err)


def test_a_report_directory_run_cannot_write_stops_it_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_launch: list[str]
) -> None:
    grid = write_grid(tmp_path / "g.yaml")
    (tmp_path / "report").write_text("a file in the way")
    _, err = exits(
        2, ["run", str(grid), "--store", str(tmp_path / "store"), "--report", str(tmp_path / "report")], capsys
    )
    assert f"error: {tmp_path / 'report'}: exists and is not a directory" in flat(err)
    assert no_launch == [] and not (tmp_path / "store").exists()


def test_building_the_parser_imports_no_analysis_and_no_engine() -> None:
    """sweeper.commands' promise: ``sweeper --help`` (and every command's start) pays for no scipy, pandas or engine
    (scipy.stats alone took 0.6 s)."""
    code = "import sys, sweeper.cli; print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    started = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(started.stdout.split())
    heavy = {"scipy", "pandas", "sklearn", "pyarrow", "pyspark", "dask", "distributed", "ray", "matplotlib"}
    assert not loaded & heavy, loaded & heavy


def test_the_commands_that_print_text_import_no_matplotlib(tmp_path: Path) -> None:
    """recommend and replay print text (as a run's closing answer does, with the same dry-run banner): the report's
    package, which draws figures with matplotlib, stays unimported (~0.6 s of every such command)."""
    arms = [ArmSpec(engine, 1, 2, 2.0, median_s=median_s) for engine, median_s in (("spark", 12.0), ("dask", 9.0))]
    write_test_rows(tmp_path / "store", "synthetic", synthetic_rows(arms, epochs=(5, 10), seed=3), "part-0")
    code = (
        "import sys; from sweeper.cli import main\n"
        f"assert main(['recommend', {str(tmp_path / 'store')!r}]) == 0\n"
        f"assert main(['replay', {str(tmp_path / 'store')!r}, '--strategy', 'race']) == 0\n"
        "drawing = [m for m in sys.modules if m.startswith(('matplotlib', 'sweeper.results.report'))]\n"
        "assert not drawing, drawing\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=120, capture_output=True)

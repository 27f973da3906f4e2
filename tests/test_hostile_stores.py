"""A store holds what anyone wrote into its Parquet files: impossible values are named and never analysed
(sweeper/store/validity.py), what it lets through breaks no command, its text reaches every output shown and never
obeyed (sweeper/text.py), ``--json`` is JSON, and the flags of replay are bounded like the grid's keys."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from sweeper import cli, load_results
from sweeper.config import load as grid_file
from sweeper.errors import UserError
from sweeper.results import recommend as rec
from sweeper.results import recommend_view as view
from sweeper.search.adaptive import TrialPolicy
from sweeper.store.validity import MAX_COUNT, MAX_ROWS, MAX_SECONDS, MIN_FIT_SECONDS, limits_text
from sweeper.text import visible
from tests.conftest import minimal_grid
from tests.support.stored_rows import write_test_rows
from tests.support.synthetic_stores import HOSTILE_ENGINE, HOSTILE_TEXT, ArmSpec, hostile_rows, synthetic_rows

ARMS = [ArmSpec("spark", 2, 2, 4.0, median_s=10.0), ArmSpec("dask", 2, 2, 4.0, median_s=15.0)]


@pytest.mark.parametrize(
    ("column", "value"),
    [("fit_wall_s", math.inf), ("fit_wall_s", -1.0), ("fit_wall_s", 1e300), ("fit_wall_s", math.nan),
     ("launch_index", 2**31 - 1), ("launch_index", -5), ("accuracy", 7.0), ("trial", -1),
     ("fit_wall_s", 0.0), ("fit_wall_s", 5e-324), ("executors", 0), ("nodes", 0), ("cores_per_executor", 0),
     ("fraction", 0.0), ("fraction", math.nan), ("fraction", 1.5), ("n_train", -3), ("threads_per_fit", 0)],
)  # fmt: skip
def test_an_ok_row_with_an_impossible_value_is_named_invalid_and_left_out(
    column: str, value: float, tmp_path: Path
) -> None:
    rows = synthetic_rows(ARMS, epochs=(5,), seed=1)
    rows[0][column] = value  # a spark row
    write_test_rows(tmp_path, rows[0]["sweep"], rows, "part-hostile")
    frame = load_results(tmp_path)
    bad = frame[frame["status"] == "invalid"]
    assert len(bad) == 1 and bad["error"].iloc[0].startswith(f"invalid value read from the store: {column}=")
    recommendation = rec.recommend(frame, n_bootstrap=200)
    assert all(math.isfinite(arm.median_s) for answer in recommendation.answers for arm in answer.arms)
    assert sum(arm.n for answer in recommendation.answers for arm in answer.arms) == len(rows) - 1
    assert "\n".join(view.lines(recommendation))  # renders


def test_an_infinite_memory_peak_is_dropped_with_a_note_and_the_row_still_counts(tmp_path: Path) -> None:
    rows = synthetic_rows(ARMS, epochs=(5,), seed=1)
    rows[0]["worker_peak_rss_gib_max"] = math.inf
    write_test_rows(tmp_path, rows[0]["sweep"], rows, "part-hostile")
    frame = load_results(tmp_path)
    assert set(frame["status"]) == {"ok"} and frame["worker_peak_rss_gib_max"].isna().sum() == 1
    assert frame["resource_note"].str.contains("out of range in the store", na=False).sum() == 1
    assert "\n".join(view.lines(rec.recommend(frame, n_bootstrap=200)))  # no OverflowError


@pytest.mark.parametrize(
    ("policy", "named"),
    [((3, 10**9, 0.05), "workload.trials.max (--max-trials): must be an integer from 1 to 1000, got 1000000000"),
     ((3, 3000, 1e-300), "workload.trials.target_rel_ci (--target-rel-ci): must be a number in [0.001, 0.5]"),
     ((3, 20, 1.0), "workload.trials.target_rel_ci (--target-rel-ci): must be a number in [0.001, 0.5], got 1.0")],
)  # fmt: skip
def test_trial_flags_are_bounded_like_the_grid(policy: tuple[int, int, float], named: str) -> None:
    with pytest.raises(UserError, match=re.escape(named)):
        TrialPolicy(*policy)


def test_a_grid_target_of_one_is_refused_by_plan_with_the_same_rule(tmp_path: Path) -> None:
    spec = minimal_grid()
    spec["workload"]["trials"] = {"min": 3, "max": 20, "target_rel_ci": 1}
    with pytest.raises(UserError, match=r"workload.trials.target_rel_ci: must be a number in \[0.001, 0.5\], got 1"):
        grid_file.parse(spec, tmp_path / "g.yaml")


def test_bootstrap_in_chunks_draws_what_one_draw_would_and_bounds_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    from sweeper.results import statistics

    values = np.arange(1000.0)
    whole = np.median(np.random.default_rng(7).choice(values, size=(300, values.size)), axis=1)
    monkeypatch.setattr(statistics, "BOOTSTRAP_CHUNK_VALUES", 7 * values.size)  # 7 resamples at a time
    chunked = statistics.bootstrap(values, 300, np.random.default_rng(7))
    assert np.array_equal(whole, chunked)


# -- what the validity check refuses, and what it lets through: no command breaks (#39) -----------------------

FOUR = [  # two shapes per engine, 3 trials each
    ArmSpec(engine, cores, 2, 4.0, median_s=median_s, trials=3)
    for engine, cores, median_s in (("spark", 1, 12.0), ("spark", 2, 8.0), ("dask", 1, 14.0), ("dask", 2, 9.0))
]


def sweeper(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """The CLI run in-process: its exit code, stdout and stderr (an error's lines unwrapped; an exception it lets out
    fails the test)."""
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    if code == 2:
        assert err.startswith("error: "), err
        err = " ".join(err.split())
    return code, out, err


def extra_flags(command: str, tmp_path: Path) -> list[str]:
    """What a command needs besides its store here: report a directory, replay fewer repeats (fast)."""
    return {"report": ["--out", str(tmp_path / "report")], "replay": ["--repeats", "20"]}.get(command, [])


def strict_json(text: str) -> Any:
    """``text`` parsed as any JSON parser reads it: ``NaN`` and ``Infinity`` refused."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def store_with(root: Path, values: dict[str, Any], launches: tuple[int, ...] | None = (0,)) -> tuple[Path, Path]:
    """A store of :data:`FOUR` whose rows of ``launches`` (None: every row) take ``values``, and a grid of digits
    to predict from it."""
    rows = synthetic_rows(FOUR, epochs=(5, 10), seed=2, sweep="s")
    for row in rows:
        if launches is None or row["launch_index"] in launches:
            row.update(values)
    write_test_rows(root / "store", "s", rows, "part-x")
    (root / "g.yaml").write_text(yaml.safe_dump(minimal_grid()))
    return root / "store", root / "g.yaml"


@pytest.mark.parametrize(
    ("column", "value"),
    [("executors", 0), ("nodes", 0), ("fit_wall_s", 0.0), ("fit_wall_s", 5e-324), ("fraction", 0.0),
     ("fraction", math.nan), ("n_train", -5)],
)  # fmt: skip
def test_a_launch_of_impossible_values_is_named_as_impossible(column: str, value: float, tmp_path: Path) -> None:
    store, _ = store_with(tmp_path, {column: value})
    frame = load_results(store)
    refused = frame[frame["launch_index"] == 0]
    assert set(refused["status"]) == {"invalid"} and set(frame[frame["launch_index"] != 0]["status"]) == {"ok"}
    named = rf"invalid value read from the store: {column}=\S+ \(impossible: outside {re.escape(limits_text(column))}\)"
    assert refused["error"].str.fullmatch(named).all()


@pytest.mark.parametrize(
    ("values", "launches", "commands"),
    [({"executors": 0}, (0,), ["recommend", "report", "predict --validate"]),
     ({"fit_wall_s": 5e-324}, (0, 2), ["recommend", "report", "predict --validate"]),
     ({"fit_wall_s": 0.0}, (0,), ["recommend", "replay --json"]),
     ({"nodes": 0}, (0,), ["replay --strategy auto"]),
     ({"fraction": 0.0}, None, ["predict --grid"]), ({"fraction": math.nan}, None, ["predict --grid"]),
     ({"n_train": -5}, None, ["predict --grid"])],
    ids=["executors-0", "time-5e-324", "time-0", "nodes-0", "fraction-0", "fraction-nan", "n_train-negative"],
)  # fmt: skip
def test_the_commands_that_broke_on_impossible_values_name_them(
    values: dict[str, Any], launches: tuple[int, ...] | None, commands: list[str], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    store, grid = store_with(tmp_path, values, launches)
    [column] = values
    for command in commands:
        name, *flags = command.replace("--grid", f"--grid {grid}").split()
        code, out, err = sweeper([name, str(store), *flags, *extra_flags(name, tmp_path)], capsys)
        if launches is None:  # every row refused: nothing to learn from, said so
            assert code == 2 and "nothing to learn a model from" in err
            continue
        assert code == 0, err
        assert "nan" not in out.lower().replace("non-inferior", "")
        if name == "recommend":
            assert f"invalid value read from the store: {column}=" in " ".join(out.split())
        if "--json" in flags:
            strict_json(out)


EXTREMES = {  # the bounds the check allows, on launches 0 to 2: every command takes them
    0: {"fit_wall_s": MIN_FIT_SECONDS},
    1: {"fit_wall_s": MAX_SECONDS, "cluster_start_s": MAX_SECONDS, "teardown_s": MAX_SECONDS},
    2: {"executors": MAX_COUNT, "cores_per_executor": MAX_COUNT, "nodes": MAX_COUNT, "total_cores": MAX_COUNT},
}
EVERY_COMMAND = ["compare", "recommend", "recommend --json", "report", "replay --strategy auto", "replay --json",
                 "replay --compare --json", "predict --validate --json", "predict --grid GRID",
                 "predict --grid GRID --json"]  # fmt: skip


@pytest.mark.slow  # every command on 3 stores, ~12 s
@pytest.mark.parametrize(
    ("extremes", "every_row"),
    [(EXTREMES, {"n_train": MAX_ROWS}), ({}, {"n_train": 0}), ({}, {"fraction": 5e-324})],
    ids=["times-shapes-rows-at-their-bounds", "no-training-rows", "fraction-5e-324"],
)
def test_every_command_copes_with_the_values_the_check_lets_through(
    extremes: dict[int, dict[str, Any]], every_row: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = synthetic_rows(FOUR, epochs=(5, 10), seed=2, sweep="s")
    for row in rows:
        row.update(every_row, **extremes.get(row["launch_index"], {}))
    write_test_rows(tmp_path / "store", "s", rows, "part-x")
    (tmp_path / "g.yaml").write_text(yaml.safe_dump(minimal_grid()))
    assert set(load_results(tmp_path / "store")["status"]) == {"ok"}
    for command in EVERY_COMMAND:
        name, *flags = command.replace("GRID", str(tmp_path / "g.yaml")).split()
        code, out, err = sweeper([name, str(tmp_path / "store"), *flags, *extra_flags(name, tmp_path)], capsys)
        assert code == 0 or (code == 2 and name in ("replay", "predict")), (command, err)
        if code == 0 and "--json" in flags:
            strict_json(out)
    if "fraction" in every_row:  # a whole training set scaled from a fraction near 0: named, not an OverflowError
        code, _, err = sweeper(["predict", str(tmp_path / "store"), "--grid", str(tmp_path / "g.yaml")], capsys)
        assert code == 2 and "more than any dataset holds" in err


# -- a store's text: shown in every output, never obeyed (#39) ------------------------------------------------


def strings(document: Any) -> list[str]:
    """Every string of a parsed JSON document, keys included."""
    if isinstance(document, dict):
        return [*document, *(text for value in document.values() for text in strings(value))]
    if isinstance(document, list):
        return [text for value in document for text in strings(value)]
    return [document] if isinstance(document, str) else []


RAW = {"ESC": "\x1b", "BEL": "\x07", "CR": "\r"}  # what a terminal acts on
SHOWN = visible("x" + HOSTILE_TEXT)  # a text column's value, as every console line writes it


@pytest.fixture(scope="module")
def hostile_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("hostile")
    write_test_rows(root / "store", "s", hostile_rows(), "part-hostile")
    (root / "g.yaml").write_text(yaml.safe_dump(minimal_grid()))
    return root / "store", root / "g.yaml"


@pytest.mark.parametrize(
    ("command", "shown"),
    [("compare", None), ("recommend", SHOWN), ("replay", visible(HOSTILE_ENGINE)),
     ("replay --compare", visible(HOSTILE_ENGINE)), ("replay --strategy halving", visible(HOSTILE_ENGINE)),
     ("predict --validate", None), ("predict --grid GRID", None)],
    ids=lambda value: value if value is None or "\\" not in value else "shown",
)  # fmt: skip
def test_every_console_command_shows_a_stores_text_as_written(
    command: str, shown: str | None, hostile_store: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("COLUMNS", "400")  # a table's title on one line
    store, grid = hostile_store
    name, *flags = command.replace("GRID", str(grid)).split()
    code, out, err = sweeper([name, str(store), *flags, *extra_flags(name, store)], capsys)
    assert code == 0, err
    assert [raw for raw, char in RAW.items() if char in out + err] == []
    if shown is not None:  # its markup shown too: '[bold]' was not read as a style
        assert shown in "".join(out.split())  # the text has no space: a line wrapped elsewhere is joined


@pytest.mark.parametrize("command", ["recommend", "replay", "replay --compare", "predict --validate", "predict --grid"])
def test_every_json_command_prints_json_with_the_text_as_written(
    command: str, hostile_store: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    store, grid = hostile_store
    name, *flags = command.replace("--grid", f"--grid {grid}").split()
    code, out, err = sweeper([name, str(store), *flags, "--json", *extra_flags(name, store)], capsys)
    assert code == 0, err
    assert [raw for raw, char in RAW.items() if char in out + err] == []  # JSON writes them \u001b, ...
    document = strict_json(out)
    if name != "predict":  # predict names Spark's and Dask's shapes only
        assert any(HOSTILE_TEXT in text for text in strings(document))  # as written, once parsed


def test_the_report_escapes_a_stores_text_in_markdown_and_html(
    hostile_store: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, _ = hostile_store
    code, out, err = sweeper(["report", str(store), "--out", str(tmp_path)], capsys)
    assert code == 0 and [raw for raw, char in RAW.items() if char in out + err] == []  # no figure's warning either
    markdown = (tmp_path / "report.md").read_text(encoding="utf-8")
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    for text in (markdown, page):
        assert [raw for raw, char in RAW.items() if char in text] == [] and "<script>" not in text
    # shown, as text: a carriage return is a line break, a space in a Markdown line
    assert r"\\x1b\[31m\\x1b\]0;owned\\x07 \[bold\]\<script\>\|\`x\`" in markdown
    assert r"\x1b[31m\x1b]0;owned\x07\x0d[bold]&lt;script&gt;|`x`" in page


def test_replay_json_writes_null_where_a_figure_is_not_a_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sweeper.results import replay as replays

    store, _ = store_with(tmp_path, {})
    real = replays.replay
    monkeypatch.setattr(replays, "replay", lambda *a: {**real(*a), "regret_median": math.nan, "regret_p95": math.inf})
    for extra in ([], ["--compare"]):
        code, out, _ = sweeper(["replay", str(store), "--json", "--repeats", "20", *extra], capsys)
        document = strict_json(out)
        found = document if not extra else document["grid"]
        assert code == 0 and found["regret_median"] is None and found["regret_p95"] is None


def test_plan_json_with_predictions_is_refused_so_stdout_stays_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, grid = store_with(tmp_path, {})
    code, out, err = sweeper(["plan", str(grid), "--json", "--predict-from", str(store)], capsys)
    assert code == 2 and out == "" and "sweeper predict STORE --grid GRID --json" in err

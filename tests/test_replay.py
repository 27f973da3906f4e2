"""Cluster-second accounting and ``sweeper replay`` on synthetic full-grid stores with known answers."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from sweeper import cli
from sweeper.commands.replay import add_parser
from sweeper.config.grid import ETA, RACE_DELTA, REPLAY_REPEATS, REPLAY_STRATEGY
from sweeper.config.sections import REPLAY, SEARCH, TRIALS
from sweeper.results.replay import KEYS, MAX_DRAWS, ReplaySettings, StoreLimits, replay
from sweeper.search.accounting import cluster_seconds, full_grid_estimate, launch_seconds, rung_axis_of
from sweeper.search.adaptive import TrialPolicy
from sweeper.store.parquet import COLUMNS
from tests.support.budget_stores import (
    Arm,
    budget_rows,
    close_race,
    easy_winner,
    frame,
    proxy_reversal,
    write_store,
)
from tests.support.stored_rows import stored_row

REPEATS = "200"


def row(launch: int, nodes: int, **values: Any) -> dict[str, Any]:
    base = {"sweep": "s", "run_id": "r1", "launch_index": launch, "nodes": nodes, "engine": "dask", "status": "ok"}
    return stored_row(**{**base, **values})


def hand_store() -> list[dict[str, Any]]:
    """Launch 0 on 2 nodes: a session (start 10, warm-up 2) of fits 3, 4 and a failed 1, then a second
    session (start 12, warm-up 3) with a fit of 5; teardown 4. Launch 1 on 1 node never started (7.2 s)."""
    first = {"cluster_start_s": 10.0, "warmup_s": 2.0, "teardown_s": 4.0}
    second = {"cluster_start_s": 12.0, "warmup_s": 3.0, "teardown_s": 4.0}
    failed = {"status": "failed", "error": "launch did not start: no workers", "error_type": "TimeoutError"}
    return [
        row(0, 2, fit_wall_s=3.0, **first),
        row(0, 2, fit_wall_s=4.0, **first),
        row(0, 2, fit_wall_s=1.0, **first, status="failed", error="worker lost"),
        row(0, 2, fit_wall_s=5.0, **second),
        *(row(1, 1, cluster_start_s=start, **failed) for start in (7.0, 7.1, 7.2)),
    ]


def test_cluster_seconds_count_each_start_warm_up_and_teardown_once() -> None:
    df = frame(hand_store())
    parts = launch_seconds(df).set_index("launch_index")
    assert parts.loc[0, ["sessions", "start_s", "warmup_s", "measured_s", "teardown_s"]].tolist() == [2, 22, 5, 13, 4]
    assert parts.loc[1, ["sessions", "start_s", "measured_s"]].tolist() == [0, 7.2, 0]
    total = cluster_seconds(df)
    assert (total.start_s, total.warmup_s, total.measured_s, total.teardown_s) == pytest.approx((51.2, 10, 26, 8))
    assert total.total_s == pytest.approx(95.2)
    assert total.measured_share == pytest.approx(26 / 95.2)
    plain_rows = pd.DataFrame([{k: v for k, v in r.items() if v is not None} for r in hand_store()])
    assert cluster_seconds(plain_rows.reindex(columns=list(COLUMNS))) == total  # the runner's rows as they are


def test_a_launch_started_once_per_rung_counts_every_start_and_teardown() -> None:
    rungs = [
        {"cluster_start_s": 10.0 + rung, "warmup_s": 2.0, "teardown_s": 3.0 + rung, "epochs": 10**rung}
        for rung in (1, 2)
    ]
    rows = [row(0, 1, fit_wall_s=1.0, **values) for values in rungs for _ in range(2)]
    rows.append(row(0, 1, status="pruned", epochs=1000))
    parts = launch_seconds(frame(rows)).iloc[0]
    assert parts[["sessions", "teardowns", "start_s", "warmup_s", "measured_s", "teardown_s"]].tolist() == [
        2, 2, 23, 4, 4, 9,
    ]  # fmt: skip
    # one start, warm-up and teardown; the pruned point at 1000 epochs: 1 s at 100 x the rung ratio 10 x 1 row
    assert full_grid_estimate(frame(rows)).total_s == pytest.approx(11.5 + 2 + 4.5 + 4 + 10)


def test_full_grid_estimate_prices_pruned_points_by_the_growth_of_the_measured_ones() -> None:
    session = {"cluster_start_s": 10.0, "warmup_s": 2.0, "teardown_s": 3.0, "model_params": "{}"}
    rows = [row(0, 1, epochs=10, fit_wall_s=t, **session) for t in (1.0, 2.0, 3.0)]
    rows += [row(0, 1, epochs=100, fit_wall_s=t, **session) for t in (19.0, 20.0, 21.0)]
    rows += [row(1, 1, epochs=10, fit_wall_s=t, engine="spark", **session) for t in (2.0, 3.0, 4.0)]
    rows += [row(1, 1, epochs=100, engine="spark", status="pruned", **session)]
    df = frame(rows)
    assert cluster_seconds(df).measured_s == pytest.approx(75)
    estimate = full_grid_estimate(df)
    assert estimate.measured_s == pytest.approx(75 + 3 * (20 / 2) * 3)  # median 3 s x growth 10 x 3 trials
    assert (estimate.start_s, estimate.warmup_s, estimate.teardown_s) == (20, 4, 6)


def test_the_rung_axis_is_read_from_the_rows_and_guessed_only_for_rows_from_before_schema_7() -> None:
    rows = [row(0, 1, epochs=10, fraction=f, rung=r, fit_wall_s=1.0) for r, f in ((0, 0.25), (1, 1.0))]
    assert rung_axis_of(frame(rows)) == "fraction"  # schema 6: the fraction changes with the rung
    recorded = frame([{**r, "rung_axis": "epochs"} for r in rows])
    assert rung_axis_of(recorded) == "epochs"  # as the run recorded it, whatever the values suggest


def test_the_full_grid_estimate_of_a_full_grid_is_its_cost() -> None:
    df = frame(budget_rows(easy_winner(), trials=3))
    assert full_grid_estimate(df).total_s == pytest.approx(cluster_seconds(df).total_s)


def run_cli(argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``sweeper replay`` through the real ``main`` (with ``replay`` registered when cli.py does not yet)."""
    build = cli.build_parser

    def with_replay() -> argparse.ArgumentParser:
        parser = build()
        commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        if "replay" not in commands.choices:
            add_parser(commands)
        return parser

    monkeypatch.setattr(cli, "build_parser", with_replay)
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out if code == 0 else err


@pytest.fixture
def store(tmp_path: Path) -> Path:
    rows = budget_rows(easy_winner(), sweep="easy", seed=1)
    rows += budget_rows(close_race(), sweep="close", seed=2)
    rows += budget_rows(proxy_reversal(), sweep="reversal", seed=3)
    return write_store(tmp_path / "store", rows)


def replayed(store: Path, sweep: str, *options: str, **fixtures: Any) -> dict[str, Any]:
    code, out = run_cli(["replay", str(store), "--sweep", sweep, "--repeats", REPEATS, "--json", *options], **fixtures)
    assert code == 0, out
    result: dict[str, Any] = json.loads(out)
    return result


def test_easy_winner_halving_with_adaptive_trials_is_right_for_a_fraction_of_the_cost(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    result = replayed(store, "easy", monkeypatch=monkeypatch, capsys=capsys)
    assert list(result) == list(KEYS)
    assert result["full_grid_best"] == "dask 2 executors x 4 cores x 4 GiB"
    assert result["within_5pct"] >= 0.95 and result["regret_median"] == 0.0
    assert result["cluster_s_fraction"] <= 0.30
    assert result["engine_verdict"] == "dask faster" and result["wrong_engine"] == 0.0
    assert result["rungs"] == [10, 100, 1000, 10000] and result["configurations"] == 6
    assert result["rank_check_widened"] <= 0.05
    assert 6 <= result["trials_mean"] < 10 and result["ci_reached"] >= 0.9


def test_a_close_race_has_no_engine_verdict_and_stays_near_the_best(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    result = replayed(store, "close", monkeypatch=monkeypatch, capsys=capsys)
    assert result["engine_verdict"] == "inconclusive" and result["wrong_engine"] is None
    assert result["within_5pct"] >= 0.95  # the two leaders are 1 % apart: either is a good choice
    assert result["full_grid_best"] in (
        "spark 4 executors x 2 cores x 4 GiB",
        "dask 4 executors x 2 cores x 4 GiB",
    )


def test_a_proxy_reversal_is_caught_by_the_rank_check(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    result = replayed(store, "reversal", monkeypatch=monkeypatch, capsys=capsys)
    assert result["full_grid_best"] == "spark 2 executors x 4 cores x 4 GiB"
    assert result["within_5pct"] >= 0.95 and result["rank_check_widened"] >= 0.95
    assert result["engine_verdict"] == "spark faster" and result["wrong_engine"] <= 0.05
    # without the rank check the best Spark configuration still goes on (the best of each engine always
    # does), so this engine reversal is caught all the same, for less cluster time
    unchecked = replayed(store, "reversal", "--rank-threshold", "-1", monkeypatch=monkeypatch, capsys=capsys)
    assert unchecked["within_5pct"] >= 0.95 and unchecked["rank_check_widened"] == 0.0
    assert unchecked["cluster_s_fraction"] < result["cluster_s_fraction"]


def test_the_grid_with_the_recorded_trial_count_costs_the_full_grid() -> None:
    df = frame(budget_rows(easy_winner(), trials=10, seed=5))
    result = replay(df, ReplaySettings(strategy="grid", trials=TrialPolicy.fixed(10), repeats=100))
    assert result["cluster_s_fraction"] == pytest.approx(1.0, abs=0.02)
    assert result["within_5pct"] == 1.0 and result["trials_mean"] == 10 and result["ci_reached"] is None


def test_replay_is_reproducible_and_leaves_out_configurations_missing_a_rung() -> None:
    rows = budget_rows([*easy_winner(), Arm("spark", 8, 1, batch_s=1.0, per_epoch_s=0.001)], seed=6)
    rows = [r for r in rows if not (r["launch_index"] == 6 and r["epochs"] == 10000)]
    df = frame(rows)
    settings = ReplaySettings(repeats=50, seed=9)
    first, again = replay(df, settings), replay(df, settings)
    assert first == again
    assert first["left_out"] == 1 and first["configurations"] == 6


def test_compare_replays_every_strategy_on_one_store(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    compared = replayed(store, "easy", "--compare", "--trials", "10", monkeypatch=monkeypatch, capsys=capsys)
    assert list(compared) == ["grid", "halving", "race", "auto"]
    assert all(set(result) == set(KEYS) for result in compared.values())
    fractions = [compared[name]["cluster_s_fraction"] for name in ("race", "halving", "grid")]
    assert fractions == sorted(fractions) and fractions[-1] == pytest.approx(1.0, abs=0.02)
    assert compared["race"]["race_settled"] == 1.0 and compared["grid"]["race_settled"] is None
    code, out = run_cli(["replay", str(store), "--sweep", "easy", "--compare", "--repeats", "20"], monkeypatch, capsys)
    text = " ".join(out.split())
    assert code == 0 and all(f"│ {name} " in out for name in ("grid", "halving", "race", "auto")) and "wrong" in text
    assert compared["auto"]["auto_all_at_once"] is not None and compared["race"]["auto_all_at_once"] is None


def test_auto_replays_what_a_grid_s_auto_chooses(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fixtures = {"monkeypatch": monkeypatch, "capsys": capsys}
    raced = replayed(store, "easy", "--strategy", "auto", "--trials", "10", **fixtures)
    assert raced["strategy"] == "race" and 0 <= raced["auto_all_at_once"] <= 1
    gridded = replayed(store, "easy", "--strategy", "auto", "--trials", "1", **fixtures)
    assert gridded["strategy"] == "grid" and gridded["auto_all_at_once"] is None


def test_a_race_needs_two_trials_and_a_delta_in_range(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = run_cli(
        ["replay", str(store), "--sweep", "easy", "--strategy", "race", "--delta", "0"], monkeypatch, capsys
    )
    assert code == 2 and "--delta" in err
    for flag, value in (("--delta", "0.7"), ("--confidence", "1")):  # the grid keys' ranges, in the grid's words
        code, err = run_cli(["replay", str(store), "--sweep", "easy", flag, value], monkeypatch, capsys)
        key = f"search.{flag[2:]}"
        allowed = str(SEARCH.field(flag[2:]).kind.describe())
        assert code == 2 and f"{key} ({flag}): must be a number in {allowed}, got {value}" in err, err
    code, err = run_cli(
        ["replay", str(store), "--sweep", "easy", "--strategy", "race", "--trials", "1"], monkeypatch, capsys
    )
    assert code == 2 and "at least 2 trials" in err


def test_text_output(store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli(["replay", str(store), "--sweep", "easy", "--repeats", "20"], monkeypatch, capsys)
    assert code == 0
    text = " ".join(out.split())
    assert "full grid's best: dask 2 executors x 4 cores x 4 GiB" in text
    assert "of repeats, within 10 %" in text and "rank check promoted more in" in text


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--sweep", "easy", "--eta", "1"], "--eta"),
        (["--sweep", "easy", "--repeats", "0"], "--repeats"),
        (["--sweep", "easy", "--trials", "many"], "--trials"),
        (["--sweep", "easy", "--trials", "adaptive", "--min-trials", "5", "--max-trials", "2"], "--max-trials"),
        (["--sweep", "easy", "--target-rel-ci", "0"], "--target-rel-ci"),
        (["--sweep", "easy", "--seed", "-1"], "--seed"),
        (["--sweep", "nosuch"], "no sweep 'nosuch'"),
        ([], "holds 3 sweeps"),
    ],
)
def test_bad_options_are_user_errors(
    store: Path, options: list[str], message: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = run_cli(["replay", str(store), *options], monkeypatch, capsys)
    assert code == 2 and err.startswith("error: ") and message in " ".join(err.split())  # wrapped at 100 columns


def test_each_flag_for_a_key_shows_its_range_and_default_from_the_schema() -> None:
    parser = argparse.ArgumentParser()
    replay_parser = add_parser(parser.add_subparsers())
    text = " ".join(replay_parser.format_help().split())
    for section, name, default in ((SEARCH, "delta", RACE_DELTA), (SEARCH, "eta", ETA),
                                   (REPLAY, "rank_threshold", 0.5), (REPLAY, "seed", 0)):  # fmt: skip
        field = section.field(name)
        assert f"({field.kind.describe()}, default {default})" in text, (name, text)
        assert replay_parser.parse_args(["store"]).__dict__[name] == field.default == default
    assert f"({REPLAY.field('repeats').kind.describe()}, default {REPLAY_REPEATS}, fewer where" in text
    assert f"({TRIALS.adaptive_kinds['min'].describe()}, default 3, or the trials the store holds" in text
    assert replay_parser.parse_args(["store"]).strategy == REPLAY_STRATEGY


def test_the_help_states_every_default() -> None:
    parser = argparse.ArgumentParser()
    replay_parser = add_parser(parser.add_subparsers())
    for action in replay_parser._actions:
        if action.option_strings and action.nargs != 0:  # every option that takes a value
            assert "default" in " ".join(str(action.help).split()), action.option_strings


def replayed_with_warnings(store: Path, *options: str, **fixtures: Any) -> tuple[dict[str, Any], str]:
    """``sweeper replay STORE --json OPTIONS``: the result, and what it printed on stderr."""
    code = cli.main(["replay", str(store), "--json", *options])
    out, err = fixtures["capsys"].readouterr()
    assert code == 0, err
    result: dict[str, Any] = json.loads(out)
    return result, err


def test_the_defaults_replay_what_the_store_holds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On a 5-trial store the default trials are 3..5, not 3..20: the grid costs the full grid, 5 trials a point;
    more trials than the store holds are taken when asked, with a warning."""
    store = write_store(tmp_path / "five", budget_rows(easy_winner(), trials=5, seed=1))
    grid, err = replayed_with_warnings(store, "--strategy", "grid", "--repeats", "50", capsys=capsys)
    assert grid["trials"] == "adaptive 3..5 to +-0.05" and grid["trials_mean"] == 5.0 and not err
    assert grid["cluster_s_fraction"] == pytest.approx(1.0, abs=0.02)
    race, _ = replayed_with_warnings(store, "--strategy", "race", "--repeats", "50", capsys=capsys)
    assert race["trials"].startswith("raced 2..5 ")  # the race's own first round, not trials.min
    asked, err = replayed_with_warnings(store, "--max-trials", "20", "--repeats", "50", capsys=capsys)
    assert asked["trials"] == "adaptive 3..20 to +-0.05"
    assert "warning: --max-trials 20: more than the 5 trials the store holds per point" in " ".join(err.split())
    two = write_store(tmp_path / "two", budget_rows(easy_winner(), trials=2, seed=1))
    fewer, _ = replayed_with_warnings(two, "--strategy", "grid", "--repeats", "50", capsys=capsys)
    assert fewer["trials"] == "adaptive 2..2 to +-0.05" and fewer["trials_mean"] == 2.0


def test_the_default_repeats_keep_a_large_store_within_the_replay_s_bound() -> None:
    small, large = StoreLimits("epochs", 5, 24), StoreLimits("epochs", 2, 10**6)
    assert small.repeats(5) == REPLAY_REPEATS
    assert large.repeats(2) == MAX_DRAWS // (2 * 10**6) == 100  # the largest race's draws within MAX_DRAWS
    assert StoreLimits("epochs", 2, MAX_DRAWS).repeats(2) == 1


def test_the_rung_axis_defaults_to_the_axis_the_store_varies() -> None:
    rows = budget_rows(easy_winner(), epochs=(10, 100), trials=3)
    by_fraction = frame([{**r, "fraction": {10: 0.5, 100: 1.0}[r["epochs"]], "epochs": 10} for r in rows])
    assert StoreLimits.of(by_fraction).rung_axis == "fraction"
    assert StoreLimits.of(frame(rows)).rung_axis == "epochs"
    result = replay(by_fraction, ReplaySettings(rung_axis="fraction", repeats=20))
    assert result["rungs"] == [0.5, 1.0]


def test_every_bad_option_is_named_at_once(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    options = ["--sweep", "easy", "--eta", "1", "--delta", "0.7", "--confidence", "1", "--trials", "many"]
    code, err = run_cli(["replay", str(store), *options], monkeypatch, capsys)
    assert code == 2
    for named in ("search.eta (--eta)", "search.delta (--delta)", "search.confidence (--confidence)", "--trials"):
        assert named in err, err
    assert err.count("search.confidence (--confidence)") == 1  # checked by halving and replay alike, said once


def test_a_sweep_with_one_configuration_cannot_be_replayed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = write_store(tmp_path / "one", budget_rows(easy_winner()[:1], trials=3))
    code, err = run_cli(["replay", str(store)], monkeypatch, capsys)
    assert code == 2 and "no two configurations measured at every value" in err


@pytest.mark.parametrize("strategy", ["grid", "halving", "race"])
def test_a_huge_launch_index_replays_as_its_renumbered_store_does(
    strategy: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Arrays indexed by launch are as long as the launches there are: a store whose launch indices run up to
    999999 (valid, and once 10.7 GB of replay) replays exactly as the same store numbered from 0."""
    rows = budget_rows(easy_winner(), sweep="easy", seed=1)
    far = [{**r, "launch_index": int(r["launch_index"]) * 1000 + 999} for r in rows]
    options = ("--strategy", strategy, "--seed", "3")
    far[-1]["launch_index"] = 999999  # a launch of its own in both stores: the numbering keeps its order
    rows[-1]["launch_index"] = max(int(r["launch_index"]) for r in rows[:-1]) + 1
    near = replayed(write_store(tmp_path / "near2", rows), "easy", *options, monkeypatch=monkeypatch, capsys=capsys)
    distant = replayed(write_store(tmp_path / "far", far), "easy", *options, monkeypatch=monkeypatch, capsys=capsys)
    assert distant == near


def test_repeats_and_trials_are_checked_together(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each flag in its range, their product over the sweep's configurations past the replay's memory bound: exit 2
    naming both flags, before anything is allocated."""
    argv = ["replay", str(store), "--sweep", "easy", "--repeats", "100000", "--max-trials", "1000"]
    code, err = run_cli(argv, monkeypatch=monkeypatch, capsys=capsys)
    assert code == 2 and "--repeats 100000 x --max-trials 1000" in err and "lower --repeats or --max-trials" in err


def test_a_race_comes_back_to_a_launch_at_a_warm_node_s_start_not_its_first() -> None:
    """The first launch's start took 100 s (a cold node: YARN localizing the jars), the others' 30 s: replayed, that
    launch pays its 100 s once, at its first visit, and 30 s at each visit after, as every launch of a store of 30 s
    starts: the two cost the same but for the 70 s of that first start, and decide alike."""
    rows = budget_rows(easy_winner(), trials=10, seed=1)
    cold = [{**row, "cluster_start_s": 100.0} if row["launch_index"] == 0 else row for row in rows]
    settings = ReplaySettings(strategy="race", trials=TrialPolicy.fixed(10), repeats=50)
    warm, first_cold = replay(frame(rows), settings), replay(frame(cold), settings)
    spent = [result["cluster_s_fraction"] * result["full_grid_cluster_s"] for result in (warm, first_cold)]
    assert spent[1] - spent[0] == pytest.approx(70.0)
    assert first_cold["trials_mean"] == warm["trials_mean"] and first_cold["within_5pct"] == warm["within_5pct"]

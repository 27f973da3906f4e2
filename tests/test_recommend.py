"""sweeper.results.recommend and its view: known answers on synthetic stores (tests/support/synthetic_stores.py)."""

from __future__ import annotations

import argparse
import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

from sweeper.commands import recommend as recommend_command
from sweeper.errors import UserError
from sweeper.results import recommend as rec
from sweeper.results import recommend_view as view
from sweeper.store.parquet import COLUMNS
from sweeper.text import OUTPUT_COLUMNS
from tests.support.stored_rows import write_test_rows
from tests.support.synthetic_stores import ArmSpec, synthetic_frame, synthetic_rows, to_frame

FAST = 500  # bootstrap resamples where the interval's last digit does not matter

CLEAR = [
    ArmSpec("spark", 2, 2, 4.0, median_s=10.0),
    ArmSpec("dask", 2, 2, 4.0, median_s=15.0),
    ArmSpec("dask", 1, 4, 2.0, median_s=20.0),
    ArmSpec("local", 1, 1, 0.0, median_s=1.0),  # the baseline: faster here, never a winner
]


def test_the_generator_fills_every_store_column() -> None:
    rows = synthetic_rows(CLEAR, epochs=(5, 50), seed=3)
    assert len(rows) == 4 * 2 * 5 and all(set(row) == set(COLUMNS) for row in rows)
    frame = synthetic_frame(CLEAR, seed=3)
    assert list(frame.columns) == list(COLUMNS) and frame["status"].eq("ok").all()


def test_a_clear_winner_is_faster_and_the_baseline_never_wins() -> None:
    answer = rec.recommend(synthetic_frame(CLEAR, seed=1), n_bootstrap=FAST).answers[0]
    assert (answer.winner.engine, answer.winner.cores_per_executor, answer.winner.executors) == ("spark", 2, 2)
    assert answer.runner_up is not None and answer.runner_up.engine == "dask"
    assert answer.verdict == rec.FASTER and answer.trials_needed is None
    assert 1.3 < answer.ratio < 1.7 and 1.0 < answer.ratio_low <= answer.ratio <= answer.ratio_high
    assert answer.winner.median_low_s <= answer.winner.median_s <= answer.winner.median_high_s
    assert [pair.other.cores_per_executor for pair in answer.pairs] == [2, 1]  # both other arms tested, Holm
    assert all(pair.p_holm >= pair.p and pair.winner_lower for pair in answer.pairs)


def test_spark_vs_dask_one_line_per_epochs() -> None:
    lines = rec.recommend(synthetic_frame(CLEAR, epochs=(5, 50), seed=2), n_bootstrap=FAST).engine_pairs
    assert [line.epochs for line in lines] == [5, 50]
    for line in lines:
        assert (line.first.engine, line.second.engine, line.second.cores_per_executor) == ("spark", "dask", 2)
        assert line.verdict == "spark faster" and line.ratio_high < 1 and abs(line.ratio - 10 / 15) < 0.1


def test_three_engines_are_compared_pair_by_pair_and_two_keep_the_spark_vs_dask_line() -> None:
    """#37: every pair of the joblib engines measured, in the descriptors' order; the JSON keeps spark_vs_dask."""
    three = [*CLEAR, ArmSpec("ray", 2, 2, 4.0, median_s=20.0)]
    found = rec.recommend(synthetic_frame(three, epochs=(5,), seed=2), n_bootstrap=FAST)
    assert [(line.first.engine, line.second.engine) for line in found.engine_pairs] == [
        ("spark", "dask"), ("spark", "ray"), ("dask", "ray")
    ]  # fmt: skip
    assert [line.verdict for line in found.engine_pairs] == ["spark faster", "spark faster", "dask faster"]
    text = view.lines(found)
    heading = text.index("Spark vs Dask vs Ray (each engine's best configuration, pair by pair):")
    assert text[heading + 3].startswith("  5 epochs: dask ") and "dask/ray " in text[heading + 3]
    document = view.to_json(found)
    assert len(document["engine_pairs"]) == 3 and len(document["spark_vs_dask"]) == 1
    assert document["spark_vs_dask"][0]["spark"]["engine"] == "spark"
    two = view.lines(rec.recommend(synthetic_frame(CLEAR, epochs=(5,), seed=2), n_bootstrap=FAST))
    assert "Spark vs Dask (each engine's best configuration):" in two


def test_two_arms_of_one_distribution_are_inconclusive_with_trials_needed() -> None:
    same = [
        ArmSpec("spark", 2, 2, 4.0, median_s=10.0, spread=0.1),
        ArmSpec("dask", 2, 2, 4.0, median_s=10.0, spread=0.1),
    ]
    answer = rec.recommend(synthetic_frame(same, seed=5), n_bootstrap=FAST).answers[0]
    assert answer.verdict == rec.INCONCLUSIVE and answer.ratio_low < 1 < answer.ratio_high
    assert answer.trials_needed is not None and answer.trials_needed > 5


@pytest.mark.parametrize(("arms", "stores"), [(2, 500), (4, 200)], ids=["two_arms", "four_arms_holm"])
def test_false_faster_rate_over_many_stores_is_at_most_five_percent(arms: int, stores: int) -> None:
    """Many simulated sweeps (one seed each), all arms from one distribution: few false winners.

    Each sweep is its own workload (``n_train`` = its seed) of one frame, so one call answers all.
    """
    same = [ArmSpec("dask", cores, 4 // cores, 4.0, median_s=10.0, spread=0.1) for cores in (1, 2, 4, 4)][:arms]
    same[-1] = ArmSpec("spark", 4, 1, 4.0, median_s=10.0, spread=0.1)
    frame = to_frame([row for seed in range(stores) for row in synthetic_rows(same, seed=seed, n_train=seed)])
    verdicts = [answer.verdict for answer in rec.recommend(frame, n_bootstrap=20).answers]
    assert len(verdicts) == stores and set(verdicts) <= {rec.FASTER, rec.INCONCLUSIVE}
    assert verdicts.count(rec.FASTER) <= 0.05 * stores  # two arms: Mann-Whitney's size at n=5 is 3.2 %


def test_too_few_trials_and_untested_arms() -> None:
    few = [ArmSpec("spark", 2, 2, 4.0, median_s=10.0, trials=3), ArmSpec("dask", 2, 2, 4.0, median_s=15.0, trials=3)]
    result = rec.recommend(synthetic_frame(few, seed=1), n_bootstrap=FAST)
    assert result.answers[0].verdict == rec.TOO_FEW_TRIALS and result.engine_pairs[0].verdict == rec.TOO_FEW_TRIALS
    third = [*CLEAR[:2], ArmSpec("dask", 1, 4, 2.0, median_s=30.0, trials=3)]
    answer = rec.recommend(synthetic_frame(third, seed=1), n_bootstrap=FAST).answers[0]
    assert answer.verdict == rec.INCONCLUSIVE and [a.cores_per_executor for a in answer.untested] == [1]
    assert answer.trials_needed is not None and answer.trials_needed >= rec.MIN_TRIALS


def test_one_configuration_and_only_a_baseline() -> None:
    answer = rec.recommend(synthetic_frame(CLEAR[:1], seed=1), n_bootstrap=FAST).answers[0]
    assert answer.verdict == rec.ONE_CONFIGURATION and answer.runner_up is None and math.isnan(answer.ratio)
    baseline = rec.recommend(synthetic_frame(CLEAR[3:], seed=1), n_bootstrap=FAST)
    assert baseline.answers == () and baseline.engine_pairs == ()
    assert view.answer_lines(baseline) == ["Overall: no answer: no ok measurement of an engine"]


def test_trials_needed_grows_with_spread_and_shrinks_with_the_gap() -> None:
    rng = np.random.default_rng(0)
    z = rng.standard_normal(20)
    tight, wide = 10 * np.exp(0.05 * z), 10 * np.exp(0.2 * z)
    assert rec.trials_needed(tight, tight * 1.05) < rec.trials_needed(wide, wide * 1.05)  # type: ignore[operator]
    assert rec.trials_needed(wide, wide * 1.5) < rec.trials_needed(wide, wide * 1.05)  # type: ignore[operator]
    assert rec.trials_needed(tight, tight) is None


def accuracy_of(arms: list[ArmSpec], **options: Any) -> rec.AccuracyCheck:
    return rec.recommend(synthetic_frame(arms, seed=4, **options), n_bootstrap=FAST).answers[0].accuracy


def test_accuracy_non_inferiority() -> None:
    fast_but_worse = [ArmSpec("spark", 2, 2, 4.0, median_s=10.0, accuracy=0.88), ArmSpec("dask", 2, 2, 4.0, 15.0)]
    check = accuracy_of(fast_but_worse)
    assert check.status == "not shown non-inferior" and check.best is not None and check.best.engine == "dask"
    assert -0.03 < check.difference < -0.01 and check.difference_low < -check.margin
    close = [ArmSpec("spark", 2, 2, 4.0, median_s=10.0, accuracy=0.899), ArmSpec("dask", 2, 2, 4.0, 15.0)]
    assert accuracy_of(close).status == "non-inferior"
    assert accuracy_of(close, identical_fits=True).status == "cannot differ"
    assert accuracy_of([ArmSpec("spark", 2, 2, 4.0, accuracy=0.95), ArmSpec("dask", 2, 2, 4.0, 15.0)]).status == (
        "most accurate"
    )


def advice_for(arm: ArmSpec) -> rec.MemoryAdvice:
    (advice,) = rec.memory_advice(synthetic_frame([arm], seed=1))
    return advice


def test_memory_over_provisioned_more_executors_fit() -> None:
    advice = advice_for(ArmSpec("dask", 2, 2, 8.0, peak_gib=1.0))
    assert advice.granted_gib == 8.0 and 0.95 <= advice.peak_gib <= 1.0 and advice.suggested_gib == 1.5
    # a node held 2 slots of 8 + 1 GiB; 1.5 GiB + 1 GiB overhead: 7 by memory, 4 cores: 4 executors of 1 core
    assert (advice.executors_per_node, advice.executors_per_node_by_memory) == (2, 7)
    assert advice.limit == "more executors fit" and advice.alternative == (4, 1)


def test_spark_advice_sets_the_heap_and_the_overhead_apart() -> None:
    advice = advice_for(ArmSpec("spark", 2, 2, 8.0, peak_gib=1.5, jvm_heap_gib=3.0, python_gib=0.8))
    assert (advice.peak_gib, advice.suggested_gib) == (3.0, 4.0)  # heap: 3 GiB + 25 %, rounded up
    # overhead: Spark's own share of a 4 GiB heap (384 MiB + ...: 409 MiB) + 0.8 GiB x 1.25 -> 1.5 GiB
    assert advice.python_peak_gib == 0.8 and advice.suggested_overhead_gib == 1.5
    sentence = view.memory_sentence(advice)
    assert "heap (spark.executor.memory) granted 8 GiB, peak 3.00 GiB, suggested 4 GiB" in sentence
    assert "overhead (spark.executor.memoryOverhead) granted " in sentence
    assert "Python workers' peak 0.80 GiB, suggested 1.5 GiB" in sentence
    hungry = advice_for(ArmSpec("spark", 2, 2, 8.0, jvm_heap_gib=3.0, python_gib=4.0))
    assert hungry.suggested_gib < hungry.granted_gib and hungry.limit == "memory"  # the heap fits, the overhead not
    dask = advice_for(ArmSpec("dask", 2, 2, 8.0, peak_gib=1.0))
    assert math.isnan(dask.suggested_overhead_gib) and "heap" not in view.memory_sentence(dask)


def test_memory_core_bound_and_memory_bound_and_not_measured() -> None:
    cores = advice_for(ArmSpec("dask", 1, 2, 8.0, peak_gib=1.0))
    assert cores.limit == "cores" and cores.suggested_gib == 1.5 and cores.alternative is None
    short = advice_for(ArmSpec("dask", 2, 2, 4.0, peak_gib=5.0))
    assert short.limit == "memory" and short.suggested_gib == 6.5 and short.executors_per_node_by_memory == 1
    heap = advice_for(ArmSpec("spark", 2, 2, 8.0, peak_gib=1.0, jvm_heap_gib=3.0))
    assert heap.peak_gib == 3.0 and heap.suggested_gib == 4.0  # the heap, not the executor's resident set
    unknown = advice_for(ArmSpec("dask", 2, 2, 4.0, peak_gib=None))
    assert unknown.limit == "not measured" and math.isnan(unknown.suggested_gib)
    assert "memory was not measured (memory not measured (synthetic))" in unknown.note


def test_idle_slots_are_named_with_their_reasons() -> None:
    arms = [
        ArmSpec("dask", 2, 2, 4.0, slot_utilisation=0.3),
        ArmSpec("spark", 2, 2, 4.0, slot_utilisation=0.3, straggle=3.0),
        ArmSpec("spark", 1, 4, 4.0, slot_utilisation=0.9),
    ]
    idle = rec.idle_slots(synthetic_frame(arms, seed=1))
    assert [(i.engine, i.cores_per_executor) for i in idle] == [("dask", 2), ("spark", 2)]
    assert idle[0].reasons[0].startswith("GIL-bound threads: 2 threads") and idle[0].slot_utilisation == 0.3
    assert idle[1].reasons == ("stragglers: the longest fit takes 3.0x the mean fit",)
    few_fits = rec.idle_slots(synthetic_frame([arms[1]], seed=1, n_fits=2))
    assert few_fits[0].reasons[0] == "fewer fits than slots: 2 fits for 4 slots"


def test_cost_objective_and_budget() -> None:
    arms = [ArmSpec("spark", 2, 2, 4.0, median_s=10.0, nodes=2), ArmSpec("dask", 2, 2, 4.0, median_s=15.0)]
    df = synthetic_frame(arms, seed=1)
    answer = rec.recommend(df, objective="cost", cost_per_node_hour=3.6, n_bootstrap=FAST).answers[0]
    assert answer.winner.engine == "dask" and answer.verdict == rec.CHEAPER  # 15 s x 1 node < 10 s x 2 nodes
    assert abs(answer.winner.median_cost - answer.winner.median_s * 3.6 / 3600) < 1e-12
    assert 1.1 < answer.ratio < 1.5
    by_time = rec.recommend(df, cost_per_node_hour=3.6, budget=0.019, n_bootstrap=FAST).answers[0]
    assert by_time.winner.engine == "spark" and by_time.within_budget is not None
    assert by_time.within_budget.engine == "dask"  # spark costs about 0.02 a measurement
    assert rec.recommend(df, cost_per_node_hour=3.6, budget=0.001, n_bootstrap=FAST).answers[0].within_budget is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"objective": "speed"}, r"--objective: must be one of time, cost, got 'speed'"),
        ({"objective": "cost"}, r"--objective cost needs --cost-per-node-hour"),
        ({"budget": 1.0}, r"--budget needs --cost-per-node-hour"),
        ({"accuracy_margin": -0.1}, r"--accuracy-margin: must be a number in \[0, 1000000000\], got -0.1"),
        ({"cost_per_node_hour": 0.0}, r"--cost-per-node-hour: must be a number in \(0, 1000000000\], got 0.0"),
    ],
    ids=["objective", "cost_without_price", "budget_without_price", "margin", "price"],
)  # each flag checked by its key's kind (sections.RECOMMEND), as replay's are
def test_bad_options_are_user_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError, match=message):
        rec.recommend(synthetic_frame(CLEAR, seed=1), **options)


def test_several_workloads_get_an_answer_each() -> None:
    frame = pd.concat([synthetic_frame(CLEAR, seed=1), synthetic_frame(CLEAR, seed=2, n_train=500)], ignore_index=True)
    answers = rec.recommend(frame, n_bootstrap=FAST).answers
    assert sorted(a.workload["n_train"] for a in answers) == [500, 1347]
    text = "\n".join(view.answer_lines(rec.recommend(frame, n_bootstrap=FAST)))
    assert "[digits, 500 training rows, 8 fits (replicas)]" in text


# -- the command ---------------------------------------------------------------------------------


def run_command(store: Path, *argv: str) -> tuple[int, str]:
    commands = argparse.ArgumentParser(prog="sweeper").add_subparsers(dest="command", required=True)
    recommend_command.add_parser(commands)
    args = commands._name_parser_map["recommend"].parse_args([str(store), *argv])
    buffer = io.StringIO()
    console = Console(file=buffer, width=300, color_system=None, markup=False, emoji=False, highlight=False)
    return args.func(args, console), buffer.getvalue()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    arms = [*CLEAR, ArmSpec("dask", 4, 1, 4.0, median_s=25.0, peak_gib=None, slot_utilisation=0.2)]
    write_test_rows(tmp_path / "store", "synthetic", synthetic_rows(arms, epochs=(5, 50), seed=1), "part-0")
    return tmp_path / "store"


def test_json_has_the_documented_keys_and_nulls(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = run_command(store, "--json")
    document = json.loads(capsys.readouterr().out)
    assert code == 0 and document["sweep"] == "synthetic"
    assert {"sweep", "answers", "spark_vs_dask", "memory"} <= set(document)
    arm_keys = {"engine", "cores_per_executor", "executors", "executor_memory_gib", "median_s"}
    assert [a["epochs"] for a in document["answers"]] == [5, 50]
    for answer in document["answers"]:
        assert {"epochs", "winner", "runner_up", "ratio", "ratio_ci", "verdict"} <= set(answer)
        assert arm_keys <= set(answer["winner"]) and arm_keys <= set(answer["runner_up"])
        assert answer["verdict"] == "faster" and len(answer["ratio_ci"]) == 2
    for line in document["spark_vs_dask"]:
        assert {"epochs", "spark", "dask", "ratio", "ratio_ci", "verdict"} <= set(line)
        assert arm_keys <= set(line["spark"]) and line["ratio"] < 1
    memory_keys = {"engine", "cores_per_executor", "executors", "granted_gib", "peak_gib", "suggested_gib"}
    assert all(memory_keys <= set(m) for m in document["memory"]) and len(document["memory"]) == 4
    unmeasured = next(m for m in document["memory"] if m["cores_per_executor"] == 4)
    assert unmeasured["peak_gib"] is None and unmeasured["suggested_gib"] is None


def test_text_names_the_winner_memory_and_idle_slots(store: Path) -> None:
    code, text = run_command(store)
    assert code == 0
    assert "5 epochs: spark 2 executors x 2 cores x 4 GiB: " in text and ": faster." in text
    assert "Spark vs Dask (each engine's best configuration):" in text and "spark faster" in text
    assert "Overall: spark 2 executors x 2 cores x 4 GiB wins at every epochs value (2 of 2 settled)" in text
    assert "dask 1 executor x 4 cores: granted 4 GiB; memory was not measured" in text
    assert "dask 1 executor x 4 cores: 20% used; likely GIL-bound threads: 4 threads" in text


def test_command_errors_are_user_errors(store: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="--objective cost needs --cost-per-node-hour"):
        run_command(store, "--objective", "cost")
    with pytest.raises(UserError, match="no such store directory"):
        run_command(tmp_path / "missing")
    code, text = run_command(store, "--objective", "cost", "--cost-per-node-hour", "2", "--budget", "0.01")
    assert code == 0 and "Cheapest configuration, per epochs value:" in text
    assert "Fastest within a budget of 0.01 per measurement:" in text


def test_the_parser_takes_the_analysis_defaults() -> None:
    commands = argparse.ArgumentParser().add_subparsers()
    recommend_command.add_parser(commands)
    parser = commands._name_parser_map["recommend"]
    args = parser.parse_args(["results/"])
    assert (args.objective, args.accuracy_margin, args.json, args.budget) == ("time", 0.005, False, None)
    with pytest.raises(SystemExit):
        parser.parse_args(["results/", "--objective", "speed"])


def test_an_engine_whose_launch_failed_is_named_and_no_engine_verdict_is_given() -> None:
    """#21: with Dask's launch failed, the answer must not read "spark wins" as if Dask had been measured."""
    rows = synthetic_rows(CLEAR[:2], epochs=(5,), seed=4)
    error = "launch did not start: dask granted 1 x 1 cores x 24105 MiB, planned 1 x 1 cores x 59392 MiB"
    for row in rows:
        if row["engine"] == "dask":
            row.update(status="failed", fit_wall_s=None, accuracy=None, error=error)
    recommendation = rec.recommend(to_frame(rows), n_bootstrap=FAST)
    assert [m.engine for m in recommendation.unmeasured] == ["dask"]
    assert recommendation.unmeasured[0].status == "failed" and "24105 MiB" in recommendation.unmeasured[0].reason
    assert recommendation.unmeasured[0].epochs == (5,)
    text = "\n".join(view.answer_lines(recommendation))
    assert "Not measured (left out of the answer above):" in text and "launch did not start" in text
    assert "5 epochs: cannot be given: dask has no ok measurement" in text
    assert "(among what was measured; see what was not)" in text
    assert view.to_json(recommendation)["unmeasured"][0]["engine"] == "dask"
    # all measured: nothing of the kind is said
    clear = rec.recommend(synthetic_frame(CLEAR[:2], epochs=(5,), seed=4), n_bootstrap=FAST)
    assert clear.unmeasured == () and "Not measured" not in "\n".join(view.answer_lines(clear))


def test_when_one_thread_beats_every_configuration_the_answer_says_neither_engine_pays_off() -> None:
    """COST: CLEAR's baseline (1 s) is faster than every cluster configuration (10 s and up)."""
    recommendation = rec.recommend(synthetic_frame(CLEAR, epochs=(5,), seed=1), n_bootstrap=FAST)
    answer = recommendation.answers[0]
    assert answer.winner.engine == "spark" and answer.baseline_s is not None and answer.baseline_wins
    text = "\n".join(view.answer_lines(recommendation))
    assert "The single-thread baseline (" in text and "neither engine pays off at this size" in text
    assert view.to_json(recommendation)["answers"][0]["baseline_wins"] is True
    slower_baseline = [spec for spec in CLEAR if spec.engine != "local"] + [ArmSpec("local", 1, 1, 0.0, median_s=99.0)]
    other = rec.recommend(synthetic_frame(slower_baseline, epochs=(5,), seed=1), n_bootstrap=FAST)
    assert not other.answers[0].baseline_wins and "pays off" not in "\n".join(view.answer_lines(other))


def test_the_answer_explains_what_settled_means() -> None:
    text = view.answer_lines(rec.recommend(synthetic_frame(CLEAR[:3], epochs=(5,), seed=1), n_bootstrap=FAST))
    overall = next(i for i, line in enumerate(text) if line.startswith("Overall:"))
    assert "settled)" in text[overall] and text[overall + 1] == f"  ({view.SETTLED_MEANS})"


def test_the_answer_names_the_sweeps_scorer_where_it_is_not_accuracy() -> None:
    rows = synthetic_rows([ArmSpec("spark", 2, 2, 4.0, median_s=10.0), ArmSpec("dask", 2, 2, 4.0, median_s=20.0)])
    text = "\n".join(view.answer_lines(rec.recommend(to_frame(rows))))
    assert "Accuracy: " in text and "Score (" not in text
    for row in rows:
        row["scoring"] = "r2"  # a regressor's sweep
    found = rec.recommend(to_frame(rows))
    text = "\n".join(view.answer_lines(found))
    assert found.score == "r2" and "Score (r2): " in text and "Accuracy: " not in text


def forest_rows(seed: int = 1) -> list[dict[str, Any]]:
    """CLEAR's rows as a random forest's sweep on n_estimators 5 and 50 (what its rows record, schema 11)."""
    rows = synthetic_rows(CLEAR, epochs=(5, 50), seed=seed)
    for row in rows:
        row.update(estimator="sklearn.ensemble.RandomForestClassifier", work_axis="n_estimators")
    return rows


def test_the_answer_names_the_sweeps_work_axis_and_fits_100_columns(tmp_path: Path) -> None:
    write_test_rows(tmp_path / "forest", "forest", forest_rows(), "part-0")
    code, text = run_command(tmp_path / "forest")  # a console 300 columns wide
    assert code == 0 and "Fastest configuration, per n_estimators value:" in text
    assert "\n  n_estimators 5: spark 2 executors x 2 cores x 4 GiB: " in text
    engines = text.split("Spark vs Dask (each engine's best configuration):")[1]
    assert engines.startswith("\n  n_estimators 5: spark ") and "\n  n_estimators 50: spark " in engines
    assert "wins at every n_estimators value" in text and "at that n_estimators value" in text
    assert "epochs" not in text
    unwrapped = view.lines(rec.recommend(to_frame(forest_rows())))
    assert max(map(len, unwrapped)) > OUTPUT_COLUMNS >= max(len(line) for line in text.splitlines())
    assert " ".join(text.split()) == " ".join(" ".join(unwrapped).split())  # wrapped at spaces, nothing lost
    mlp = rec.recommend(synthetic_frame(CLEAR, epochs=(5, 50), seed=1))
    assert mlp.work_axis == "epochs" and "\n  5 epochs: spark" in "\n".join(view.lines(mlp))
    assert view.to_json(rec.recommend(to_frame(forest_rows())))["work_axis"] == "n_estimators"


def test_compare_against_names_the_work_axis_of_a_forests_sweeps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sweeper.cli import main

    for name, seed in (("a", 1), ("b", 2)):
        write_test_rows(tmp_path / name, "forest", forest_rows(seed), "part-0")
    assert main(["compare", str(tmp_path / "a"), "--against", str(tmp_path / "b")]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if "agree" in line)
    assert " n_estimators " in header and "epochs" not in header

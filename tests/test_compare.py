"""sweeper.results.statistics on the committed fixture store (its numbers: tests/fixtures/make_fixture_store.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sweeper import load_results
from sweeper.errors import UserError
from sweeper.names import CONFIG
from sweeper.results import statistics
from tests.fixtures.make_fixture_store import STORE, TIMES_S, fixture_rows

A, B, C = (5, 7, 13.0), (4, 9, 11.0), (6, 5, 19.0)  # the fixture's configurations: cores, executors, GiB


@pytest.fixture(scope="module")
def df() -> pd.DataFrame:
    return load_results(STORE)


def times(engine: str, config: tuple[int, int, float], epochs: int) -> list[float]:
    return TIMES_S[(engine, *config, epochs)]


def one(table: pd.DataFrame, **where: Any) -> pd.Series:
    """The single row of ``table`` matching ``where`` (a config tuple is spread over its columns)."""
    mask = pd.Series(True, index=table.index)
    for column, value in where.items():
        if column == "config":
            for name, part in zip(CONFIG, value, strict=True):
                mask &= table[name] == part
        else:
            mask &= table[column] == value
    rows = table[mask.astype(bool)]
    assert len(rows) == 1, rows
    return rows.iloc[0]


def test_committed_fixture_store_holds_exactly_the_generator_rows(df: pd.DataFrame) -> None:
    expected = pd.DataFrame(fixture_rows())
    keys = ["engine", "cores_per_executor", "epochs", "trial"]
    got = df.sort_values(keys).reset_index(drop=True)
    expected = expected.sort_values(keys).reset_index(drop=True)
    assert got[keys].astype(str).equals(expected[keys].astype(str))
    assert got["status"].tolist() == expected["status"].tolist()
    np.testing.assert_array_equal(
        got["fit_wall_s"].to_numpy(dtype=float, na_value=np.nan), expected["fit_wall_s"].astype(float).to_numpy()
    )
    assert (STORE / "fixture").is_dir() and sum(p.stat().st_size for p in STORE.rglob("*")) < 300_000


def test_spark_vs_dask_on_fully_separated_samples(df: pd.DataFrame) -> None:
    row = one(statistics.engines(df), config=A, epochs=10)
    spark, dask = times("spark", A, 10), times("dask", A, 10)
    assert (row.spark_n, row.dask_n, row.spark_median_s, row.dask_median_s) == (5, 5, 12.0, 7.0)
    assert row.spark_iqr_s == 2.0 and row.total_cores == 35
    assert row.ratio == pytest.approx(12 / 7)
    assert row.mwu_p == pytest.approx(2 / 252)  # exact two-sided p for 5 vs 5, fully separated
    assert row.mwu_p == pytest.approx(stats.mannwhitneyu(spark, dask, alternative="two-sided").pvalue)
    assert row.welch_p == pytest.approx(stats.ttest_ind(spark, dask, equal_var=False).pvalue)
    assert row.verdict == "dask faster"
    assert row.config == "7 executors x 5 cores x 13 GiB"


def test_ratio_intervals_bracket_the_estimate_and_are_reproducible(df: pd.DataFrame) -> None:
    first, again = statistics.engines(df), statistics.engines(df)
    pd.testing.assert_frame_equal(first, again)
    assert (first.ratio_low <= first.ratio).all() and (first.ratio <= first.ratio_high).all()
    # the seed is what makes it reproducible: with few resamples another seed gives another interval
    spark, dask = times("spark", A, 10), times("dask", A, 10)
    assert statistics.ratio_of_medians(spark, dask, n_bootstrap=20, seed=0) == (
        12 / 7,
        pytest.approx(1.2354, abs=1e-4),
        2.4,
    )
    assert statistics.ratio_of_medians(spark, dask, n_bootstrap=20, seed=1) != statistics.ratio_of_medians(
        spark, dask, n_bootstrap=20, seed=0
    )
    # the bootstrap medians lie within the samples, so the interval lies within min/max ratios
    row = one(first, config=A, epochs=10)
    assert 10 / 9 <= row.ratio_low < row.ratio < row.ratio_high <= 14 / 5


def test_interleaved_samples_are_no_significant_difference(df: pd.DataFrame) -> None:
    row = one(statistics.engines(df), config=B, epochs=10)
    expected = stats.mannwhitneyu(times("spark", B, 10), times("dask", B, 10), alternative="two-sided").pvalue
    assert row.mwu_p == pytest.approx(expected) and row.mwu_p > 0.05
    assert row.verdict == "inconclusive"
    assert row.ratio_low < 1 < row.ratio_high


def test_spark_faster_when_spark_is_faster(df: pd.DataFrame) -> None:
    swapped = df.assign(engine=df["engine"].replace({"spark": "dask", "dask": "spark"}))
    row = one(statistics.engines(swapped), config=A, epochs=10)
    assert row.ratio == pytest.approx(7 / 12) and row.verdict == "spark faster"


def test_fewer_than_five_trials_are_too_few_to_tell(df: pd.DataFrame) -> None:
    table = statistics.engines(df)
    for epochs in (10, 100):
        row = one(table, config=C, epochs=epochs)
        assert (row.spark_n, row.dask_n) == (3, 3)
        assert row.verdict == "too few trials"
        assert row.mwu_p == pytest.approx(0.1)  # reported, but no verdict from it
    assert one(statistics.engines(df, min_trials=3), config=C, epochs=10).verdict == "inconclusive"


def test_failed_rows_are_counted_and_listed_never_in_statistics(df: pd.DataFrame) -> None:
    table = statistics.engines(df)
    row = one(table, config=A, epochs=100)
    assert (row.spark_n, row.spark_failed, row.spark_median_s) == (5, 1, 62.0)
    assert one(table, config=C, epochs=100).dask_failed == 1
    failures = statistics.failures(df)
    assert failures[["engine", "epochs", "status", "error_type"]].values.tolist() == [
        ["spark", 100, "failed", "Py4JJavaError"],
        ["dask", 100, "timeout", "TimeoutError"],
    ]
    assert failures.config.tolist() == ["7 executors x 5 cores x 13 GiB", "5 executors x 6 cores x 19 GiB"]
    assert "Java heap space" in failures.error.iloc[0]
    assert statistics.summary(df).failed.sum() == 2


def test_summary_medians_and_quartiles(df: pd.DataFrame) -> None:
    row = one(statistics.summary(df), engine="local", epochs=100)
    assert (row.n, row.median_s, row.q1_s, row.q3_s, row.iqr_s) == (5, 52.0, 51.0, 53.0, 2.0)
    assert row.config == "1 thread (baseline)"
    assert row.accuracy == pytest.approx(0.962)


def test_configs_names_the_fastest_and_by_how_much(df: pd.DataFrame) -> None:
    row = one(statistics.configs(df), engine="dask", epochs=10)
    samples = [times("dask", config, 10) for config in (B, A, C)]  # ordered as the store sorts them
    assert row.n_configs == 3
    assert row.fastest == "7 executors x 5 cores x 13 GiB" and row.fastest_median_s == 7.0
    assert row.fastest_total_cores == 35
    assert row.second == "9 executors x 4 cores x 11 GiB" and row.second_over_fastest == pytest.approx(10.5 / 7)
    assert row.slowest == "5 executors x 6 cores x 19 GiB" and row.slowest_over_fastest == pytest.approx(16 / 7)
    assert row.kruskal_p == pytest.approx(stats.kruskal(*samples).pvalue)
    assert row.anova_p == pytest.approx(stats.f_oneway(*samples).pvalue)
    assert row.verdict == "too few trials"  # C has 3 trials
    assert set(statistics.configs(df).engine) == {"spark", "dask"}  # the baseline is not a configuration


def test_configs_verdicts_without_the_three_trial_configuration(df: pd.DataFrame) -> None:
    table = statistics.configs(df[df.cores_per_executor != 6])
    row = one(table, engine="spark", epochs=100)
    assert row.kruskal_p == pytest.approx(stats.kruskal(times("spark", B, 100), times("spark", A, 100)).pvalue)
    assert row.verdict == "configurations differ"
    single = statistics.configs(df[df.cores_per_executor == 5])
    assert set(single.verdict) == {"one configuration"} and single.second_over_fastest.isna().all()


def test_speedup_over_the_single_thread(df: pd.DataFrame) -> None:
    table = statistics.speedup(df)
    row = one(table, engine="dask", config=A, epochs=10)
    assert row.baseline_median_s == 22.0
    assert row.speedup == pytest.approx(22 / 7)
    assert row.efficiency == pytest.approx(22 / 7 / 35)
    assert "local" not in set(table.engine)


def test_cost_is_the_fewest_cores_that_beat_one_thread_or_never(df: pd.DataFrame) -> None:
    table = statistics.cost(df)
    got = {(r.engine, r.epochs): (r.cost, r.cost_cores) for r in table.itertuples()}
    assert got[("dask", 10)] == ("30", 30)  # C (30 cores) already beats 22 s
    assert got[("spark", 10)] == ("35", 35)  # C is slower than one thread, A (35) is not
    assert got[("dask", 100)] == ("35", 35)
    assert got[("spark", 100)][0] == "never" and pd.isna(got[("spark", 100)][1])
    assert table.cost_cores.dtype == pd.Int64Dtype()
    never = one(table, engine="spark", epochs=100)
    assert never.best_speedup == pytest.approx(52 / 57) and never.best_config == "9 executors x 4 cores x 11 GiB"


def test_cost_without_a_baseline(df: pd.DataFrame) -> None:
    table = statistics.cost(df[df.engine != "local"])
    assert set(table.cost) == {"no baseline"}
    assert statistics.speedup(df[df.engine != "local"]).speedup.isna().all()


def test_price_and_the_time_cost_frontier(df: pd.DataFrame) -> None:
    table = statistics.price(df, cost_per_node_hour=2.5)
    row = one(table, engine="dask", config=A, epochs=10)
    assert row.median_cost == pytest.approx(7 / 3600 * 2 * 2.5)
    assert one(table, engine="local", epochs=100).median_cost == pytest.approx(52 / 3600 * 1 * 2.5)
    front = table[table.pareto.astype(bool)]
    assert sorted(zip(front.engine, front.epochs, front.total_cores, strict=True)) == [
        ("dask", 10, 35),
        ("dask", 100, 35),
        ("local", 100, 1),  # one node: slower but cheaper than every cluster at 100 epochs
    ]
    with pytest.raises(UserError, match=r"--cost-per-node-hour: must be a number in \(0, "):  # the flag's kind
        statistics.price(df, cost_per_node_hour=0)


def test_workloads_are_compared_apart(df: pd.DataFrame) -> None:
    slower = df.assign(n_train=999, fit_wall_s=df.fit_wall_s * 2)
    both = pd.concat([df, slower], ignore_index=True)
    table = statistics.engines(both)
    assert len(table) == 2 * len(statistics.engines(df))
    assert one(table, config=A, epochs=10, n_train=999).spark_median_s == 24.0
    speedups = statistics.speedup(both)
    assert one(speedups, engine="dask", config=A, epochs=10, n_train=999).speedup == pytest.approx(22 / 7)


def test_missing_engine_and_all_failed_groups_give_no_verdict_and_no_warning(df: pd.DataFrame) -> None:
    only_spark = statistics.engines(df[df.engine == "spark"])
    assert set(only_spark.verdict) == {"too few trials"} and (only_spark.dask_n == 0).all()
    assert only_spark.ratio.isna().all() and only_spark.mwu_p.isna().all()
    failed = df.assign(status="failed")
    assert (statistics.summary(failed).n == 0).all()
    assert set(statistics.configs(failed).verdict) == {"no ok measurements"}
    assert statistics.cost(failed).empty


@pytest.mark.parametrize(
    ("x", "y", "front"),
    [
        pytest.param([1, 2, 3], [3, 2, 1], [True, True, True], id="all_trade_offs"),
        pytest.param([1, 2, 3], [1, 2, 3], [True, False, False], id="one_dominates"),
        pytest.param([1, 1], [2, 2], [True, True], id="ties_both_kept"),
        pytest.param([1, np.nan, 3], [3, 0, 2], [True, False, True], id="nan_never_on_front"),
        pytest.param([], [], [], id="empty"),
    ],
)
def test_pareto_front(x: list[float], y: list[float], front: list[bool]) -> None:
    assert statistics.pareto_front(x, y).tolist() == front


def test_statistics_helpers_on_edge_cases() -> None:
    assert statistics.mann_whitney([1, 1, 1], [1, 1]) == (3.0, 1.0)
    assert all(np.isnan(v) for v in statistics.mann_whitney([], [1.0]))
    assert np.isnan(statistics.welch_p([1.0], [2.0, 3.0]))
    assert np.isnan(statistics.welch_p([1.0, 1.0], [1.0, 1.0]))
    assert all(np.isnan(v) for v in statistics.ratio_of_medians([1.0], []))
    assert statistics.ratio_of_medians([4.0], [2.0]) == (2.0, 2.0, 2.0)

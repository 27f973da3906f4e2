"""Successive halving and its rank check, on medians with known answers."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from sweeper.errors import UserError
from sweeper.search.halving import (
    HalvingPolicy,
    HalvingResult,
    keep_count,
    kendall_tau,
    rank_check,
    rung_values,
    successive_halving,
)
from sweeper.search.halving_batch import RungTrials, halving_batch

EPOCHS = (10, 100, 1000, 10000)


class Table:
    """Known medians per configuration and rung; records every measure call."""

    def __init__(self, medians_s: Mapping[str, Sequence[float]]) -> None:
        self.medians_s = medians_s
        self.calls: list[tuple[int, list[str]]] = []

    def __call__(self, rung: int, keys: Sequence[str]) -> dict[str, float]:
        self.calls.append((rung, list(keys)))
        return {key: self.medians_s[key][rung] for key in keys}

    def run(self, policy: HalvingPolicy | None = None) -> HalvingResult[str]:
        return successive_halving(list(self.medians_s), len(EPOCHS), self, policy or HalvingPolicy())


def linear(batch_s: float, per_epoch_s: float) -> list[float]:
    return [batch_s + per_epoch_s * e for e in EPOCHS]


def test_rungs_and_keep_counts() -> None:
    assert rung_values([1.0, 0.25, float("nan"), 0.5, 0.25]) == (0.25, 0.5, 1.0)
    policy = HalvingPolicy(eta=3, min_keep=1)
    assert [keep_count(n, policy) for n in (1, 2, 3, 4, 9, 10, 27)] == [1, 1, 1, 2, 3, 4, 9]
    assert [keep_count(n, HalvingPolicy(eta=2)) for n in (1, 2, 3, 5)] == [1, 2, 2, 3]


def test_kendall_tau_matches_scipy_with_ties() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        x, y = rng.integers(0, 4, 9), rng.integers(0, 4, 9)
        assert kendall_tau(x, y) == pytest.approx(stats.kendalltau(x, y).statistic)
    assert math.isnan(kendall_tau([1.0], [2.0])) and math.isnan(kendall_tau([1, 1], [1, 2]))


def test_a_consistent_order_keeps_the_best_third_and_finds_the_winner() -> None:
    table = Table({f"c{i}": linear(1 + i, 0.01 * (1 + i)) for i in range(9)})  # c0 fastest everywhere
    result = table.run()
    assert [rung.promoted for rung in result.rungs[:3]] == [("c0", "c1", "c2"), ("c0", "c1"), ("c0", "c1")]
    assert result.best == "c0" and not result.widened
    assert [check.agreement for check in (r.check for r in result.rungs[1:]) if check] == [1.0, 1.0, 1.0]
    assert [len(keys) for _, keys in table.calls] == [9, 3, 2, 2]  # one measure call per rung
    unmeasured = result.unmeasured(table.medians_s)
    assert len(unmeasured) == 6 + 7 + 7 and ("c2", 2) in unmeasured and ("c0", 3) not in unmeasured


def reversal() -> dict[str, list[float]]:
    """'a' leads 'b' up to 1000 epochs, 'b' leads at 10000; 'w' (3rd at 10 epochs) is the true winner."""
    return {
        "a": linear(1.0, 0.040),  # 1.4, 5, 41, 401
        "b": linear(8.0, 0.037),  # 8.37, 11.7, 45, 378
        "w": linear(20.0, 0.025),  # 20.25, 22.5, 45, 270
        "x": linear(30.0, 0.050),
        "y": linear(40.0, 0.050),
        "z": linear(50.0, 0.050),
    }


def test_the_rank_check_catches_a_reversal_at_the_last_rung_and_brings_back_the_winner() -> None:
    table = Table(reversal())
    result = table.run()
    assert result.rungs[0].pruned == ("w", "x", "y", "z")
    last = result.rungs[-1]
    assert last.check is not None and last.check.agreement == -1.0 and not last.check.passed
    assert last.widened == ("w", "x")  # as many as were there, best first
    assert result.best == "w" and result.widened
    assert table.calls[-1] == (3, ["w", "x"])


def test_without_the_rank_check_the_reversal_picks_the_wrong_configuration() -> None:
    result = Table(reversal()).run(HalvingPolicy(rank_threshold=-1.0))
    assert result.best == "b" and not result.widened


def test_swaps_within_the_tie_tolerance_are_noise_not_a_lying_proxy() -> None:
    medians = {"a": [1.0, 100.0], "b": [2.0, 99.5], "c": [3.0, 300.0]}  # a and b swap by 0.5 %
    policy = HalvingPolicy(eta=2, min_keep=1)
    for tie_rel, widened in ((0.01, ()), (0.001, ("c",))):
        result = successive_halving(
            list(medians), 2, lambda r, keys: {k: medians[k][r] for k in keys}, replace(policy, tie_rel=tie_rel)
        )
        assert result.rungs[1].widened == widened


def noisy(median_s: float) -> list[float]:
    """Three trials around ``median_s`` with 4 % noise (log sd 0.04)."""
    return [median_s * math.exp(0.04 * z) for z in (-1.0, 0.0, 1.0)]


@pytest.mark.parametrize(
    ("apart", "reversal"),
    [(1.03, False), (1.07, False), (1.30, True)],  # 7 %: medians more than delta apart, not confidently so
)
def test_the_rank_check_counts_only_swaps_of_pairs_confidently_apart(apart: float, reversal: bool) -> None:
    """Two configurations swap between rungs, 3 trials each with 4 % noise: a swap of two 3 % or 7 % apart is not a
    reversal (their bound on the difference does not clear delta), one of two 30 % apart is; a third, pruned at the
    first rung, comes back only then."""
    trials = {"a": [noisy(10.0), noisy(10.0 * apart)], "b": [noisy(10.0 * apart), noisy(10.0)]}
    trials["c"] = [noisy(100.0), noisy(1.0)]
    policy = HalvingPolicy(eta=2, min_keep=1)
    check = rank_check({k: v[0] for k, v in trials.items() if k != "c"}, {k: v[1] for k, v in trials.items()}, policy)
    assert (check.agreement == -1.0) if reversal else (check.agreement is None and check.passed)
    result = successive_halving(list(trials), 2, lambda r, keys: {k: trials[k][r] for k in keys}, policy)
    assert result.rungs[0].promoted == ("a", "b") and result.rungs[1].widened == (("c",) if reversal else ())


def test_widen_all_brings_back_every_pruned_configuration() -> None:
    result = Table(reversal()).run(HalvingPolicy(widen="all"))
    assert set(result.rungs[-1].widened) == {"w", "x", "y", "z"} and result.best == "w"


def test_later_survivors_come_back_first() -> None:
    medians = {
        "a": [1.0, 1.0, 10.0],
        "b": [2.0, 2.0, 5.0],  # swaps with a at the last rung
        "c": [3.0, 3.0, 1.0],  # pruned at rung 0, the winner
        "d": [2.5, 9.0, 9.0],  # survived rung 0, pruned at rung 1
        "e": [3.5, 0, 0],
        "f": [4.0, 0, 0],
    }
    policy = HalvingPolicy(eta=2)
    result = successive_halving(list(medians), 3, lambda r, keys: {k: medians[k][r] for k in keys}, policy)
    assert result.rungs[0].promoted == ("a", "b", "d") and result.rungs[1].promoted == ("a", "b")
    assert result.rungs[2].widened == ("d", "c") and result.best == "c"


def test_a_configuration_without_an_ok_trial_ranks_last() -> None:
    medians = {"a": [float("nan"), 1.0], "b": [2.0, 2.0], "c": [3.0, 3.0], "d": [4.0, 4.0]}
    policy = HalvingPolicy(eta=2)
    result = successive_halving(list(medians), 2, lambda r, keys: {k: medians[k][r] for k in keys}, policy)
    assert result.rungs[0].measured[-1] == "a" and result.best == "b"


@pytest.mark.parametrize(
    ("options", "named"),
    [({"eta": 1}, "--eta"), ({"eta": 2.5}, "--eta"), ({"rank_threshold": 2.0}, "--rank-threshold"),
     ({"widen": "some"}, "widen"), ({"min_keep": 0}, "min_keep"),
     ({"tie_rel": 1.0}, r"search.delta \(--delta\): must be a number in \(0, 0.5\], got 1.0")],
)  # fmt: skip
def test_bad_policies_are_user_errors(options: dict[str, object], named: str) -> None:
    with pytest.raises(UserError, match=named):
        HalvingPolicy(**options)  # type: ignore[arg-type]


def test_the_best_of_each_engine_always_goes_on_so_an_engine_reversal_is_measured() -> None:
    # spark's fixed cost loses the short runs, its lower cost per epoch wins the long one
    medians = {
        "dask-a": linear(1.0, 0.040),
        "dask-b": linear(2.0, 0.041),
        "dask-c": linear(3.0, 0.042),
        "spark-a": linear(20.0, 0.025),
        "spark-b": linear(30.0, 0.030),
        "spark-c": linear(40.0, 0.035),
    }
    alone = Table(medians)
    assert alone.run(HalvingPolicy(rank_threshold=-1.0)).best.startswith("dask")  # pruned spark at 10 epochs
    table = Table(medians)
    result = successive_halving(list(medians), len(EPOCHS), table, HalvingPolicy(rank_threshold=-1.0), group=engine)
    assert result.rungs[0].promoted == ("dask-a", "dask-b", "spark-a")  # the best 2, then spark's best
    assert all("spark-a" in rung.measured for rung in result.rungs) and result.best == "spark-a"


def engine(key: str) -> str:
    return key.split("-")[0]


def test_the_reports_rung_table_checks_ranks_with_the_sweeps_own_delta() -> None:
    """Three configurations 10 % apart whose order reverses between rungs: with delta 5 % every pair is confidently
    apart (agreement -1); a sweep run with delta 0.5 recorded it, and then none is (no agreement)."""
    from sweeper.results.statistics import rungs
    from tests.support.budget_stores import RUN_ID, WORKLOAD, frame
    from tests.support.stored_rows import VERSIONS, stored_row

    def rows(delta: float) -> list[dict[str, object]]:
        made = []
        for rung, epochs in ((0, 10), (1, 100)):
            for index, base in enumerate((10.0, 11.0, 12.1)):
                median = base if rung == 0 else 12.1 * 11.0 / base
                for trial, noise in enumerate((0.99, 1.0, 1.01)):
                    made.append(stored_row(
                        **WORKLOAD, **VERSIONS, sweep="s", run_id=RUN_ID, launch_index=index, engine="dask",
                        cores_per_executor=index + 1, executors=1, total_cores=index + 1, nodes=1,
                        executor_memory_gib=2.0, epochs=epochs, trial=trial, rung=rung, status="ok",
                        fit_wall_s=median * noise, race_delta=delta, race_confidence=0.95,
                        measurement_key=f"{index}-{epochs}-{trial}",
                    ))  # fmt: skip
        return made

    assert rungs(frame(rows(0.05)), "epochs")["agreement"].tolist()[1] == pytest.approx(-1.0)
    assert math.isnan(rungs(frame(rows(0.5)), "epochs")["agreement"].tolist()[1])


def batch_times(
    rng: np.random.Generator, sizes: Sequence[int], rungs: int, repeats: int
) -> list[list[list[list[float]]]]:
    """Trial times per (configuration of every race in turn, rung, repeat): orders that change from rung to rung
    (so rank checks fail and widen), times on a coarse grid (ties), one to six trials, and a repeat of one trial
    each (the medians decide the rank check)."""
    times = []
    for size in sizes:
        base = rng.uniform(10, 12, (size, rungs)) * np.where(
            rng.random((1, rungs)) < 0.5, 1.0, rng.uniform(0.9, 1.1, (size, rungs))
        )
        for config in range(size):
            times.append(
                [
                    [
                        list(
                            np.round(
                                base[config, rung]
                                * np.exp(0.03 * rng.standard_normal(1 if repeat == 0 else rng.integers(1, 7))),
                                1,
                            )
                        )
                        for repeat in range(repeats)
                    ]
                    for rung in range(rungs)
                ]
            )
    return times


def rung_trials(times: list[list[list[list[float]]]]) -> RungTrials:
    """:class:`RungTrials` of trial times per (configuration, rung, repeat), as replay computes them."""
    logs = [[[np.log(t) for t in per_rung] for per_rung in config] for config in times]
    return RungTrials(
        np.array([[[np.median(t) for t in per_rung] for per_rung in config] for config in times]),
        np.array([[[len(t) for t in per_rung] for per_rung in config] for config in times]),
        np.array([[[v.mean() for v in per_rung] for per_rung in config] for config in logs]),
        np.array([[[((v - v.mean()) ** 2).sum() for v in per_rung] for per_rung in config] for config in logs]),
    )


def halved_alone(
    times: list[list[list[list[float]]]], rungs: int, repeat: int, policy: HalvingPolicy
) -> tuple[HalvingResult[int], np.ndarray]:
    """successive_halving of one race's configurations on one repeat's trials (the best of each parity goes on), and
    which (configuration, rung) it measured."""
    measured = np.zeros((len(times), rungs), dtype=bool)

    def measure(rung: int, keys: Sequence[int]) -> dict[int, list[float]]:
        measured[list(keys), rung] = True
        return {key: times[key][rung][repeat] for key in keys}

    return successive_halving(list(range(len(times))), rungs, measure, policy, group=lambda key: key % 2), measured


@pytest.mark.parametrize(
    "policy",
    [
        HalvingPolicy(),
        HalvingPolicy(eta=2, min_keep=1, rank_threshold=0.8),
        HalvingPolicy(widen="all", rank_threshold=0.9),
    ],
)
def test_halving_many_problems_at_once_decides_as_successive_halving_does(policy: HalvingPolicy) -> None:
    """Replay's vectorised halving (every repeat of every race together) chooses, widens and measures exactly as
    successive_halving on each (race, repeat) alone, ties and median-only rank checks included."""
    rng = np.random.default_rng(5)
    sizes, rungs, repeats = (2, 5, 13, 40), 4, 12
    times = batch_times(rng, sizes, rungs, repeats)
    starts = np.cumsum([0, *sizes])
    groups = np.array([i % 2 for size in sizes for i in range(size)])
    result = halving_batch(rung_trials(times), starts, groups, policy)
    widened = 0
    for race, size in enumerate(sizes):
        for repeat in range(repeats):
            per_config = [times[starts[race] + config] for config in range(size)]
            alone, measured = halved_alone(per_config, rungs, repeat, policy)
            problem = race * repeats + repeat
            assert result.best[problem] == starts[race] + alone.best
            assert result.widened[problem] == alone.widened
            assert np.array_equal(result.measured[starts[race] : starts[race + 1], :, repeat], measured)
            widened += alone.widened
    assert widened >= 10  # the rank check failed and brought configurations back, often

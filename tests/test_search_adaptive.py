"""Adaptive trials: the distribution-free CI of the median and the stopping rule, on known data."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sweeper.errors import UserError
from sweeper.search.adaptive import (
    CI_REACHED,
    MAX_TRIALS,
    TrialPolicy,
    decide,
    median_ci_ranks,
    median_rank_ci,
    stopping_trials,
)


def coverage(n: int, low: int) -> float:
    """P(x(low+1) <= median < x(n-low)) for 0-based ``low``: P(low+1 <= B <= n-low-1), B ~ Bin(n, 1/2)."""
    rank = low + 1
    return sum(math.comb(n, k) for k in range(rank, n - rank + 1)) / 2**n


@pytest.mark.parametrize("n", range(1, 41))
def test_ranks_are_the_narrowest_interval_with_95_percent_coverage(n: int) -> None:
    ranks = median_ci_ranks(n)
    if n < 6:  # even [min, max] covers only 1 - 2**(1-n) < 95 %
        assert ranks is None
        assert coverage(n, 0) < 0.95
        return
    assert ranks is not None
    low, high = ranks
    assert high == n - 1 - low  # symmetric
    assert coverage(n, low) >= 0.95
    assert coverage(n, low + 1) < 0.95  # one rank narrower would not cover


def test_the_interval_covers_a_skewed_median_at_least_95_percent_of_the_time() -> None:
    rng = np.random.default_rng(3)
    samples = rng.exponential(size=(4000, 12))  # true median ln 2, far from normal
    low, high = median_ci_ranks(12) or (0, 0)
    ordered = np.sort(samples, axis=1)
    covered = (ordered[:, low] <= math.log(2)) & (math.log(2) <= ordered[:, high])
    assert 0.95 <= covered.mean() <= 0.995


def test_median_rank_ci_of_few_values_has_no_bounds() -> None:
    median, low, high = median_rank_ci([3.0, 1.0, 2.0])
    assert median == 2.0 and math.isnan(low) and math.isnan(high)
    assert all(math.isnan(v) for v in median_rank_ci([]))


def trials_until_stop(times: np.ndarray, policy: TrialPolicy) -> tuple[int, str | None]:
    """Feed trials one at a time as the runner does; the number taken and the stop reason."""
    for n in range(1, times.size + 1):
        decision = decide(times[:n].tolist(), policy)
        if not decision.keep_measuring:
            return n, decision.stop_reason
    raise AssertionError("never stopped")


def test_tight_data_stops_at_min_with_ci_reached() -> None:
    times = 100 * np.exp(0.005 * np.random.default_rng(1).standard_normal(30))
    assert trials_until_stop(times, TrialPolicy(8, 20, 0.05)) == (8, CI_REACHED)


def test_noisy_data_runs_to_max_with_max_trials() -> None:
    times = 100 * np.exp(0.5 * np.random.default_rng(2).standard_normal(30))
    assert trials_until_stop(times, TrialPolicy(3, 20, 0.05)) == (20, MAX_TRIALS)


def test_no_stop_on_the_ci_before_six_trials_whatever_min_says() -> None:
    assert trials_until_stop(np.full(30, 5.0), TrialPolicy(3, 20, 0.05)) == (6, CI_REACHED)


def test_a_fixed_count_keeps_todays_behaviour_without_a_stop_reason() -> None:
    assert trials_until_stop(np.full(30, 5.0), TrialPolicy.fixed(10)) == (10, None)


def test_failed_trials_count_towards_max() -> None:
    decision = decide([10.0, 11.0], TrialPolicy(3, 5, 0.05), trials_taken=5)
    assert (decision.keep_measuring, decision.stop_reason) == (False, MAX_TRIALS)
    assert decide([10.0, 11.0], TrialPolicy(3, 5, 0.05), trials_taken=4).keep_measuring


def test_stopping_trials_matches_decide_row_by_row() -> None:
    rng = np.random.default_rng(4)
    spreads = np.repeat([0.005, 0.03, 0.08, 0.5], 50)[:, None]
    draws = 10 * np.exp(spreads * rng.standard_normal((200, 15)))
    policy = TrialPolicy(4, 15, 0.05)
    taken, reached = stopping_trials(draws, policy)
    expected = [trials_until_stop(row, policy) for row in draws]
    assert taken.tolist() == [n for n, _ in expected]
    assert reached.tolist() == [reason == CI_REACHED for _, reason in expected]
    assert 0 < reached.mean() < 1  # both outcomes occur


@pytest.mark.parametrize(
    ("minimum", "maximum", "target", "named"),
    [(0, 5, 0.05, "trials.min"), (5, 3, 0.05, "trials.max"), (3, 20, 0.0, "target_rel_ci"), (3, 20, 1.5, "--target")],
)
def test_bad_policies_are_user_errors_naming_the_key(minimum: int, maximum: int, target: float, named: str) -> None:
    with pytest.raises(UserError, match=named):
        TrialPolicy(minimum, maximum, target)

"""Adaptive trials: measure a (launch, point) until the 95 % CI of its median is tight enough.

After ``min_trials`` trials, a point keeps measuring until the confidence interval of its median
time lies within ``+-target_rel_ci`` of the median (stop reason ``'ci reached'``) or
``max_trials`` trials were taken (``'max trials'``).

The interval is the distribution-free order-statistic interval of the median: with ``n`` times
sorted, ``[x(l), x(n+1-l)]`` covers the true median with probability ``P(l <= B <= n-l)``,
``B ~ Binomial(n, 1/2)``, whatever the distribution of the times; ``l`` is the largest rank that
keeps this coverage at or above the confidence. It is exact (no normality: run times are skewed,
with outliers), needs no random numbers (the same times always give the same decision, and the
runner's decision can be replayed offline bit for bit), and costs one sort. Its one price: below
6 trials no 95 % interval exists (even ``[min, max]`` covers only ``1 - 2**(1-n)``), so a point
never stops on ``'ci reached'`` before its 6th trial, whatever ``min_trials`` says.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from sweeper.config.grid import ADAPTIVE as GRID_ADAPTIVE
from sweeper.config.sections import trials_problems
from sweeper.errors import UserError

CI_REACHED = "ci reached"
MAX_TRIALS = "max trials"
CONFIDENCE = 0.95


@dataclass(frozen=True)
class TrialPolicy:
    """How many trials a (launch, point) takes: ``target_rel_ci=None`` is a fixed count (``max_trials``)."""

    min_trials: int
    max_trials: int
    target_rel_ci: float | None
    confidence: float = CONFIDENCE

    def __post_init__(self) -> None:
        problems = trials_problems(self.min_trials, self.max_trials, self.target_rel_ci)
        if not 0.5 < self.confidence < 1:
            problems.append(f"confidence must be between 0.5 and 1, got {self.confidence}")
        if problems:
            raise UserError(problems)

    @classmethod
    def fixed(cls, trials: int) -> TrialPolicy:
        """Today's behaviour: exactly ``trials`` trials, no stop reason."""
        return cls(trials, trials, None)

    @property
    def adaptive(self) -> bool:
        return self.target_rel_ci is not None


ADAPTIVE = TrialPolicy(GRID_ADAPTIVE.min_trials, GRID_ADAPTIVE.max_trials, GRID_ADAPTIVE.target_rel_ci)


@dataclass(frozen=True)
class Decision:
    """Whether a point keeps measuring, why it stopped, and its median with the CI (NaN: no interval yet)."""

    keep_measuring: bool
    stop_reason: str | None
    median_s: float
    ci_low_s: float
    ci_high_s: float


@lru_cache(maxsize=1024)
def median_ci_ranks(n: int, confidence: float = CONFIDENCE) -> tuple[int, int] | None:
    """0-based indices ``(low, high)`` into ``n`` sorted values of the median's CI; None when none exists.

    >>> median_ci_ranks(5) is None, median_ci_ranks(6), median_ci_ranks(20)
    (True, (0, 5), (5, 14))
    """
    best = None
    below = 0  # ways for fewer than `rank` of n values to fall below the median: sum of comb(n, k), k < rank
    for rank in range(1, n // 2 + 1):  # 1-based lower rank l; the upper rank is n + 1 - l
        below += math.comb(n, rank - 1)
        if 1 - 2 * below / 2**n < confidence:  # coverage P(l <= B <= n - l), B ~ Binomial(n, 1/2)
            break
        best = (rank - 1, n - rank)
    return best


def median_rank_ci(times_s: Sequence[float] | np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """Median and its distribution-free CI from order statistics (NaN bounds when there are too few times for
    one); the answer's interval is the bootstrap one, :func:`sweeper.results.statistics.median_bootstrap_ci`.

    >>> median_rank_ci([10.0, 10.2, 9.9, 10.1, 10.0, 9.8, 10.3])
    (10.0, 9.8, 10.3)
    """
    values = np.sort(np.asarray(times_s, dtype=float))
    if values.size == 0:
        return (math.nan, math.nan, math.nan)
    ranks = median_ci_ranks(values.size, confidence)
    low, high = (math.nan, math.nan) if ranks is None else (values[ranks[0]], values[ranks[1]])
    return (float(np.median(values)), float(low), float(high))


def decide(ok_times_s: Sequence[float], policy: TrialPolicy, trials_taken: int | None = None) -> Decision:
    """After a trial: keep measuring this (launch, point)? ``trials_taken`` counts failed trials too.

    ``max_trials`` bounds ``trials_taken`` (default: the number of ok times), so a point whose
    trials fail does not measure forever.

    >>> decide([10.0, 10.1, 9.9, 10.0, 10.2, 9.8], TrialPolicy(3, 20, 0.05)).stop_reason
    'ci reached'
    >>> decide([10.0, 14.0, 7.0], TrialPolicy(3, 20, 0.05)).keep_measuring
    True
    """
    taken = len(ok_times_s) if trials_taken is None else trials_taken
    median_s, low_s, high_s = median_rank_ci(ok_times_s, policy.confidence)
    if policy.adaptive and taken >= policy.min_trials and _tight(median_s, low_s, high_s, policy):
        return Decision(False, CI_REACHED, median_s, low_s, high_s)
    if taken >= policy.max_trials:
        return Decision(False, MAX_TRIALS if policy.adaptive else None, median_s, low_s, high_s)
    return Decision(True, None, median_s, low_s, high_s)


def _tight(median_s: float, low_s: float, high_s: float, policy: TrialPolicy) -> bool:
    """Whether the CI lies within +-target of the median (False without an interval)."""
    if math.isnan(low_s) or policy.target_rel_ci is None:
        return False
    return max(median_s - low_s, high_s - median_s) <= policy.target_rel_ci * median_s


def stopping_trials(draws_s: np.ndarray, policy: TrialPolicy) -> tuple[np.ndarray, np.ndarray]:
    """:func:`decide` on many series at once: rows of ``draws_s`` are trials in the order they are taken.

    ``draws_s`` has at least ``max_trials`` columns. Returns, per row, the number of trials taken
    before the point stopped and whether it stopped on ``'ci reached'`` (else ``'max trials'``).
    Each count looks only at the rows still open.
    """
    rows = draws_s.shape[0]
    taken = np.full(rows, policy.max_trials, dtype=int)
    reached = np.zeros(rows, dtype=bool)
    target = policy.target_rel_ci
    if target is None:
        return taken, reached
    open_rows = np.arange(rows)
    for n in range(policy.min_trials, policy.max_trials + 1):
        ranks = median_ci_ranks(n, policy.confidence)
        if ranks is None:
            continue
        ordered = np.sort(draws_s[open_rows, :n], axis=1)
        median = _sorted_median(ordered)
        half = np.maximum(median - ordered[:, ranks[0]], ordered[:, ranks[1]] - median)
        stop = half <= target * median
        taken[open_rows[stop]], reached[open_rows[stop]] = n, True
        open_rows = open_rows[~stop]
        if open_rows.size == 0:
            break
    return taken, reached


def _sorted_median(ordered: np.ndarray) -> np.ndarray:
    """Per row of ``ordered`` (sorted rows), its median, as :func:`numpy.median` computes it.

    >>> _sorted_median(np.array([[1.0, 2.0, 4.0, 8.0], [1.0, 1.0, 3.0, 5.0]]))
    array([3., 2.])
    """
    n = ordered.shape[1]
    if n % 2:
        return np.asarray(ordered[:, n // 2])
    return np.asarray((ordered[:, n // 2 - 1] + ordered[:, n // 2]) / 2)

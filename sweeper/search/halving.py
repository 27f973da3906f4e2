"""Successive halving across configurations, with a rank check that promotes more when the proxy lies.

Every configuration is measured on the cheapest rung (the smallest value of the rung axis,
epochs or fraction); only the best ``ceil(n / eta)`` by median time (at least ``min_keep``) go on
to the next value; the last rung is the full measurement and its best median is the choice.

The rank check: from the second rung on, the configurations measured at both this rung and the
previous one are ranked at each, and Kendall's tau-b of the two orders is recorded (1: the
order is kept, -1: reversed). Below ``rank_threshold`` (default 0.5: clearly more pairs keep
their order than swap) the cheaper rungs were a poor proxy for this one, so pruning on them is
undone in part: configurations pruned so far come back and are measured at this rung before its
promotion, as many as are already there (``widen="double"``, the default) or all of them
(``"all"``); those that survived more rungs come first, then the faster at the rung they were
pruned. Only pairs *confidently apart* at a rung count in the check there; the others are ties:
two near-equal configurations swap by noise alone, which says nothing about the proxy. With the
rung's trials, a pair is confidently apart when the one-sided bound at ``confidence`` on its
log-time difference (the spread pooled over the rung's configurations) clears ``tie_rel`` (default
delta, 5 %); without a spread (one trial each), when the medians differ by more than ``tie_rel``.
``min_keep`` (default 2) keeps two configurations up to the last rung, so a reversal there is still
seen.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from sweeper.config.grid import ETA, RACE_CONFIDENCE, RACE_DELTA, RANK_THRESHOLD
from sweeper.config.sections import REPLAY, flag_problems, search_problems
from sweeper.errors import UserError
from sweeper.search.spread import pooled_log_sd

K = TypeVar("K", bound=Hashable)
MIN_KEEP = 2
TIE_REL = RACE_DELTA
WIDEN = ("double", "all")


@dataclass(frozen=True)
class HalvingPolicy:
    """``search`` of a grid with ``strategy: halving``."""

    eta: int = ETA
    rank_threshold: float = RANK_THRESHOLD
    min_keep: int = MIN_KEEP
    widen: str = "double"
    tie_rel: float = TIE_REL
    confidence: float = RACE_CONFIDENCE

    def __post_init__(self) -> None:
        problems = search_problems(eta=self.eta, delta=self.tie_rel, confidence=self.confidence)
        problems += flag_problems(REPLAY, rank_threshold=self.rank_threshold)
        if self.min_keep < 1:
            problems.append(f"min_keep must be at least 1, got {self.min_keep}")
        if self.widen not in WIDEN:
            problems.append(f"widen must be one of {', '.join(WIDEN)}, got {self.widen!r}")
        if problems:
            raise UserError(problems)


@dataclass(frozen=True)
class RankCheck:
    """Kendall's tau-b of the orders at this rung and the previous one (None: fewer than 2 to compare)."""

    agreement: float | None
    configurations: int
    passed: bool


@dataclass(frozen=True)
class Rung(Generic[K]):
    """What halving did at one rung: measured (in order of median time), promoted, pruned, widened."""

    index: int
    measured: tuple[K, ...]
    promoted: tuple[K, ...]
    pruned: tuple[K, ...]
    check: RankCheck | None
    widened: tuple[K, ...]  # pruned before, brought back to this rung by a failed rank check


@dataclass(frozen=True)
class HalvingResult(Generic[K]):
    """Every rung's decisions and the choice: the best median at the last rung."""

    rungs: tuple[Rung[K], ...]

    @property
    def best(self) -> K:
        return self.rungs[-1].measured[0]

    @property
    def widened(self) -> bool:
        """Whether any rank check failed and promoted more."""
        return any(rung.widened for rung in self.rungs)

    def unmeasured(self, configurations: Iterable[K]) -> list[tuple[K, int]]:
        """(configuration, rung index) never measured: the ``pruned`` rows to write."""
        return [(key, rung.index) for rung in self.rungs for key in configurations if key not in rung.measured]


Measured = float | Sequence[float]  # a median, or every ok trial's time
Measure = Callable[[int, Sequence[K]], Mapping[K, Measured]]
Group = Callable[[K], Hashable]


def rung_values(values: Iterable[Any]) -> tuple[Any, ...]:
    """The rungs: the sorted distinct values of the rung axis (missing values left out).

    >>> rung_values([1000, 10, 100, 10, None])
    (10, 100, 1000)
    """
    present = {value for value in values if value is not None and not (isinstance(value, float) and math.isnan(value))}
    return tuple(sorted(present))


def keep_count(n: int, policy: HalvingPolicy) -> int:
    """How many of ``n`` measured configurations go on: ``ceil(n / eta)``, at least ``min_keep`` (at most n).

    >>> keep_count(6, HalvingPolicy()), keep_count(2, HalvingPolicy()), keep_count(27, HalvingPolicy())
    (2, 2, 9)
    """
    return min(n, max(policy.min_keep, math.ceil(n / policy.eta)))


def kendall_tau(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, tie_rel: float = 0.0) -> float:
    """Kendall's tau-b of two paired samples; NaN with fewer than 2 pairs or all tied.

    Two values count as tied when they differ by at most ``tie_rel`` times the smaller (positive values).

    >>> kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]), kendall_tau([1, 2, 3], [3, 2, 1])
    (1.0, -1.0)
    >>> kendall_tau([1.0, 2.0, 3.0], [2.0, 1.98, 3.0], tie_rel=0.05)
    0.8164965809277261
    """
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    upper = np.triu_indices(a.size, 1)
    da, db = _order_signs(a, tie_rel)[upper], _order_signs(b, tie_rel)[upper]
    denominator = math.sqrt(float(np.count_nonzero(da)) * float(np.count_nonzero(db)))
    return float(np.sum(da * db) / denominator) if denominator > 0 else math.nan


def _order_signs(values: np.ndarray, tie_rel: float) -> np.ndarray:
    """sign(v_i - v_j) for every pair, 0 where they differ by at most ``tie_rel`` times the smaller."""
    difference = values[:, None] - values[None, :]
    tied = np.abs(difference) <= tie_rel * np.minimum(values[:, None], values[None, :])
    return np.where(tied, 0.0, np.sign(difference))


def apart_signs(times_s: Sequence[Sequence[float]], tie_rel: float, confidence: float) -> np.ndarray:
    """sign of the log-time difference for every pair of configurations (their ok trials), 0 where the pair is not
    confidently apart: the one-sided bound at ``confidence`` on ``|difference|`` (spread pooled) is not above
    ``log1p(tie_rel)``. Without a spread (every configuration one trial): medians more than ``tie_rel`` apart.

    >>> apart_signs([[10.0, 10.4, 9.6], [10.3, 10.7, 9.9], [13.0, 13.5, 12.5]], 0.05, 0.95)
    array([[ 0.,  0., -1.],
           [ 0.,  0., -1.],
           [ 1.,  1.,  0.]])
    """
    logs = [np.log(np.asarray(times, dtype=float)) for times in times_s]
    pooled_sd, df = pooled_log_sd(logs)
    if df < 1:
        return _order_signs(np.array([float(np.median(times)) for times in times_s]), tie_rel)
    means, inverse_n = np.array([v.mean() for v in logs]), np.array([1 / v.size for v in logs])
    difference = means[:, None] - means[None, :]
    from scipy import stats  # here: importing scipy.stats (0.6 s) would slow every command's start

    margin = float(stats.t.ppf(confidence, df)) * pooled_sd * np.sqrt(inverse_n[:, None] + inverse_n[None, :])
    return np.where(np.abs(difference) - margin > math.log1p(tie_rel), np.sign(difference), 0.0)


def _tau_of_signs(da: np.ndarray, db: np.ndarray) -> float:
    """Kendall's tau-b from the pair signs at two rungs (NaN when either has every pair tied)."""
    upper = np.triu_indices(da.shape[0], 1)
    a, b = da[upper], db[upper]
    denominator = math.sqrt(float(np.count_nonzero(a)) * float(np.count_nonzero(b)))
    return float(np.sum(a * b) / denominator) if denominator > 0 else math.nan


def _as_times(measured: Mapping[K, Measured]) -> dict[K, list[float]]:
    """Every configuration's finite ok times (a median: one)."""
    times = {k: [float(v)] if isinstance(v, (int, float)) else [float(x) for x in v] for k, v in measured.items()}
    return {k: [x for x in values if math.isfinite(x)] for k, values in times.items()}


def _median(measured: Measured) -> float:
    values = _as_times({0: measured})[0]
    return float(np.median(values)) if values else math.nan


def ranked(medians_s: Mapping[K, float]) -> list[K]:
    """Configurations fastest first; a NaN median (no ok trial) ranks last; ties keep their given order."""
    order = sorted(enumerate(medians_s.items()), key=lambda item: (math.isnan(item[1][1]), item[1][1], item[0]))
    return [key for _, (key, _) in order]


def rank_check(previous_s: Mapping[K, Measured], current_s: Mapping[K, Measured], policy: HalvingPolicy) -> RankCheck:
    """Rank agreement of the configurations measured at both rungs (medians, or every ok trial's time: then only
    pairs confidently apart at a rung count there, see :func:`apart_signs`).

    >>> near = {"a": [10.0, 10.4, 9.6], "b": [10.3, 10.7, 9.9]}  # 3 % apart with 4 % noise, swapped: a tie
    >>> rank_check(near, {"a": near["b"], "b": near["a"]}, HalvingPolicy()).agreement is None
    True
    """
    previous_t, current_t = _as_times(previous_s), _as_times(current_s)
    both = [k for k in current_t if k in previous_t and current_t[k] and previous_t[k]]
    tau = math.nan
    if len(both) >= 2:
        signs = [apart_signs([t[k] for k in both], policy.tie_rel, policy.confidence) for t in (previous_t, current_t)]
        tau = _tau_of_signs(*signs)
    agreement = None if math.isnan(tau) else tau
    return RankCheck(agreement, len(both), agreement is None or agreement >= policy.rank_threshold)


def widened(pruned: Mapping[K, tuple[int, float]], promoted: Sequence[K], policy: HalvingPolicy) -> list[K]:
    """The pruned configurations a failed rank check brings back, from ``{key: (last rung, median there)}``.

    >>> widened({"a": (0, 3.0), "b": (1, 9.0), "c": (0, 2.0)}, ["x", "y"], HalvingPolicy())
    ['b', 'c']
    """
    order = sorted(pruned, key=lambda key: (-pruned[key][0], _sortable(pruned[key][1])))
    return order if policy.widen == "all" else order[: len(promoted)]


def _sortable(median_s: float) -> float:
    return math.inf if math.isnan(median_s) else median_s


def promoted(order: Sequence[K], kept: int, medians_s: Mapping[K, float], group: Group[K] | None) -> list[K]:
    """The first ``kept`` of ``order``, plus the best measured configuration of every group not among them.

    With ``group`` = the engine, the best Spark and the best Dask configuration always go on: the
    engine answer is measured at full length, and the rank check compares the engines at every rung
    (a short run that favours one engine cannot prune the other).

    >>> promoted(["d1", "d2", "s1", "s2"], 2, {"d1": 1.0, "d2": 2.0, "s1": 3.0, "s2": 4.0}, lambda k: k[0])
    ['d1', 'd2', 's1']
    """
    chosen = list(order[:kept])
    if group is not None:
        groups = {group(key) for key in chosen}
        for key in order[kept:]:
            if group(key) not in groups and math.isfinite(medians_s[key]):
                chosen.append(key)
                groups.add(group(key))
    return chosen


def successive_halving(
    configurations: Sequence[K],
    n_rungs: int,
    measure: Measure[K],
    policy: HalvingPolicy,
    group: Group[K] | None = None,
) -> HalvingResult[K]:
    """Run halving: ``measure(rung, keys)`` measures those configurations at that rung, returning their median times
    or every ok trial's time (the rank check then counts only pairs confidently apart).

    ``measure`` is called once per rung with the promoted configurations, and once more when the
    rank check fails, with the ones it brings back. ``group`` (the engine): the best of each group
    always goes on (see :func:`promoted`).
    """
    if n_rungs < 1 or not configurations:
        raise ValueError("halving needs at least one rung and one configuration")
    candidates = list(configurations)
    previous: dict[K, Measured] | None = None
    pruned: dict[K, tuple[int, float]] = {}
    rungs: list[Rung[K]] = []
    for index in range(n_rungs):
        measured = dict(measure(index, candidates))
        check: RankCheck | None = None
        extra: list[K] = []
        if previous is not None:
            check = rank_check(previous, measured, policy)
            extra = [] if check.passed else widened(pruned, candidates, policy)
            if extra:
                measured.update(measure(index, extra))
                for key in extra:
                    del pruned[key]
        medians_s = {key: _median(value) for key, value in measured.items()}
        order = ranked(medians_s)
        kept = len(order) if index == n_rungs - 1 else keep_count(len(order), policy)
        going_on = promoted(order, kept, medians_s, group)
        dropped = [key for key in order if key not in going_on]
        pruned.update((key, (index, medians_s[key])) for key in dropped)
        rungs.append(Rung(index, tuple(order), tuple(going_on), tuple(dropped), check, tuple(extra)))
        previous, candidates = measured, going_on
    return HalvingResult(tuple(rungs))

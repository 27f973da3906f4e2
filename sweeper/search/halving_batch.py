"""Successive halving of many problems at once: :func:`sweeper.search.halving.successive_halving`'s decisions,
vectorised for replay, where a problem is one repeat of one race.

A race's configurations are a contiguous range of rows of the per (configuration, rung, repeat) arrays of
:class:`RungTrials`; every problem of the race starts from all of them. At each rung the candidates of every problem
are flat arrays (problem, configuration, position), grouped by problem and in the order successive_halving holds
them, so a rung costs a sort of what it measures; the rank check counts the pairs of each problem's candidates.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import stats

from sweeper.search.halving import HalvingPolicy

PAIRS_AT_ONCE = 1 << 20  # the rank check's pairs held at once (a few arrays of 8 bytes each)


@dataclass(frozen=True)
class RungTrials:
    """Per (configuration, rung, repeat): the median of the trials taken, and for the rank check how many trials
    there are, the mean of their logarithms and the sum of squares of those around it (None: one rung, no check)."""

    median_s: np.ndarray
    count: np.ndarray
    log_mean: np.ndarray | None = None
    log_ssd: np.ndarray | None = None


@dataclass(frozen=True)
class BatchResult:
    """Per problem (race x repeats + repeat): the configuration chosen and whether a rank check widened; per
    (configuration, rung, repeat): whether it was measured."""

    best: np.ndarray
    widened: np.ndarray
    measured: np.ndarray


@dataclass
class _Entries:
    """The configurations a rung measures: problem, configuration and position, grouped by problem in order."""

    problem: np.ndarray
    config: np.ndarray
    position: np.ndarray

    def take(self, index: np.ndarray) -> _Entries:
        return _Entries(self.problem[index], self.config[index], self.position[index])


def halving_batch(trials: RungTrials, starts: np.ndarray, groups: np.ndarray, policy: HalvingPolicy) -> BatchResult:
    """Halving on every repeat of every race: race ``r`` is configurations ``starts[r]:starts[r + 1]``, problem
    ``r * repeats + repeat``; ``groups``: each configuration's group (its engine: the best of each goes on)."""
    n_configs, n_rungs, repeats = trials.median_s.shape
    measured = np.zeros((n_configs, n_rungs, repeats), dtype=bool)
    n_problems = (len(starts) - 1) * repeats
    widened = np.zeros(n_problems, dtype=bool)
    if n_rungs == 1:
        measured[:] = True
        return BatchResult(every_best(trials.median_s[:, 0, :], starts), widened, measured)
    entries = _first_rung(starts, repeats)
    pruned = _Pruned.empty()
    for rung in range(n_rungs):
        if rung > 0:
            failed = ~_rank_check_passes(entries, trials, rung, n_problems, repeats, policy)
            extra, pruned = pruned.widen(failed, np.bincount(entries.problem, minlength=n_problems), policy)
            widened[np.unique(extra.problem)] = True
            entries = _merged(entries, extra)
        measured[entries.config, rung, entries.problem % repeats] = True
        median = trials.median_s[entries.config, rung, entries.problem % repeats]
        if rung == n_rungs - 1:
            return BatchResult(_segment_best(entries, median, n_problems), widened, measured)
        entries, dropped = _promote(entries, median, groups, n_problems, policy)
        pruned = pruned.add(dropped, rung, median)
    raise AssertionError("unreachable: the last rung returns")


def every_best(median_s: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per problem (race x repeats + repeat), the configuration of least median (the first of equals) among all of
    its race's, from ``median_s`` (configurations x repeats)."""
    least = np.minimum.reduceat(median_s, starts[:-1], axis=0)
    race = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
    rows = np.arange(median_s.shape[0])[:, None]
    first = np.where(median_s == least[race], rows, median_s.shape[0])
    return np.asarray(np.minimum.reduceat(first, starts[:-1], axis=0).ravel())


def _first_rung(starts: np.ndarray, repeats: int) -> _Entries:
    """Every configuration of every problem, in order."""
    sizes = np.repeat(np.diff(starts), repeats)
    problem = np.repeat(np.arange(sizes.size), sizes)
    position = np.arange(problem.size) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    return _Entries(problem, starts[problem // repeats] + position, position)


def _merged(entries: _Entries, extra: _Entries) -> _Entries:
    """The candidates and the configurations a failed rank check brought back (after them), grouped by problem."""
    if extra.problem.size == 0:
        return entries
    both = _Entries(*(np.concatenate(pair) for pair in zip(_fields(entries), _fields(extra), strict=True)))
    return both.take(np.lexsort((both.position, both.problem)))


def _fields(entries: _Entries) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return entries.problem, entries.config, entries.position


def _ranks(entries: _Entries, median: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The entries' order fastest first within each problem (ties: by position, as :func:`halving.ranked`), and
    each one's rank."""
    order = np.lexsort((entries.position, median, entries.problem))
    return order, _cumcount(entries.problem[order])


def _cumcount(sorted_keys: np.ndarray) -> np.ndarray:
    """Each element's index among the equal keys before it (``sorted_keys`` grouped)."""
    index = np.arange(sorted_keys.size)
    new = np.r_[True, sorted_keys[1:] != sorted_keys[:-1]] if sorted_keys.size else np.zeros(0, dtype=bool)
    return index - np.maximum.accumulate(np.where(new, index, 0))


def _segment_best(entries: _Entries, median: np.ndarray, n_problems: int) -> np.ndarray:
    """Per problem, the configuration ranked first."""
    order, rank = _ranks(entries, median)
    best = np.full(n_problems, -1)
    first = order[rank == 0]
    best[entries.problem[first]] = entries.config[first]
    return best


def _promote(
    entries: _Entries, median: np.ndarray, groups: np.ndarray, n_problems: int, policy: HalvingPolicy
) -> tuple[_Entries, _Entries]:
    """The candidates of the next rung (in rank order, as :func:`halving.promoted` leaves them) and those dropped
    (with their position here, which breaks ties of median as their order in ``pruned`` does)."""
    order, rank = _ranks(entries, median)
    ranked = entries.take(order)
    size = np.bincount(entries.problem, minlength=n_problems)
    keep = np.minimum(size, np.maximum(policy.min_keep, -(-size // policy.eta)))
    going = rank < keep[ranked.problem]
    group_key = ranked.problem * (int(groups.max()) + 1) + groups[ranked.config]
    present = np.zeros(n_problems * (int(groups.max()) + 1), dtype=bool)
    present[group_key[going]] = True
    missing = np.flatnonzero(~going & ~present[group_key] & np.isfinite(median[order]))
    _, first = np.unique(group_key[missing], return_index=True)
    going[missing[first]] = True
    promoted = ranked.take(np.flatnonzero(going))
    promoted.position = _cumcount(promoted.problem)
    dropped = np.flatnonzero(~going)
    return promoted, _Entries(ranked.problem[dropped], ranked.config[dropped], order[dropped])


@dataclass(frozen=True)
class _Pruned:
    """The configurations pruned so far: problem, configuration, the rung they were pruned at and their median
    there, and a tie-breaker of equal medians (their order at that rung)."""

    problem: np.ndarray
    config: np.ndarray
    rung: np.ndarray
    median: np.ndarray
    tie: np.ndarray

    @classmethod
    def empty(cls) -> _Pruned:
        none = np.zeros(0, dtype=int)
        return cls(none, none, none, np.zeros(0), none)

    def add(self, dropped: _Entries, rung: int, median: np.ndarray) -> _Pruned:
        """``dropped`` (its position: the index into ``median``) pruned at ``rung``."""
        return _Pruned(
            np.concatenate([self.problem, dropped.problem]),
            np.concatenate([self.config, dropped.config]),
            np.concatenate([self.rung, np.full(dropped.problem.size, rung)]),
            np.concatenate([self.median, median[dropped.position]]),
            np.concatenate([self.tie, dropped.position]),
        )

    def widen(self, failed: np.ndarray, candidates: np.ndarray, policy: HalvingPolicy) -> tuple[_Entries, _Pruned]:
        """What the failed rank checks bring back (:func:`halving.widened`: those that survived more rungs first,
        then the faster; as many as a problem's ``candidates``, or all), placed after the candidates; the rest."""
        index = np.flatnonzero(failed[self.problem])
        if index.size == 0:
            return _Entries(*(np.zeros(0, dtype=int) for _ in range(3))), self
        median = np.where(np.isnan(self.median[index]), np.inf, self.median[index])
        index = index[np.lexsort((self.tie[index], median, -self.rung[index], self.problem[index]))]
        rank = _cumcount(self.problem[index])
        back = rank < candidates[self.problem[index]] if policy.widen == "double" else np.ones(index.size, dtype=bool)
        chosen = index[back]
        position = candidates[self.problem[chosen]] + rank[back]
        rest = np.ones(self.problem.size, dtype=bool)
        rest[chosen] = False
        kept = _Pruned(self.problem[rest], self.config[rest], self.rung[rest], self.median[rest], self.tie[rest])
        return _Entries(self.problem[chosen], self.config[chosen], position), kept


def _rank_check_passes(
    entries: _Entries, trials: RungTrials, rung: int, n_problems: int, repeats: int, policy: HalvingPolicy
) -> np.ndarray:
    """Per problem, :func:`halving.rank_check` of its candidates between the previous rung and this one: True where
    Kendall's tau-b of the pairs confidently apart is undefined or at least the threshold."""
    repeat = entries.problem % repeats
    rules = [_SignRule.of(entries, trials, r, repeat, n_problems, policy) for r in (rung - 1, rung)]
    counts = np.zeros((3, n_problems))  # sum of sign products, pairs apart at the previous rung, at this one
    for problems, rows, columns, later in _pair_blocks(entries.problem, n_problems):
        (a, a_above), (b, b_above) = (rule.apart(rows, columns) for rule in rules)
        a &= later
        b &= later
        both = a & b
        agreeing = np.count_nonzero(both & (a_above == b_above), axis=(1, 2))
        together = 2 * agreeing - np.count_nonzero(both, axis=(1, 2))
        counts[:, problems] += [together, np.count_nonzero(a, axis=(1, 2)), np.count_nonzero(b, axis=(1, 2))]
    denominator = np.sqrt(counts[1] * counts[2])
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = np.where(denominator > 0, counts[0] / np.where(denominator > 0, denominator, 1.0), np.nan)
    return np.isnan(tau) | (tau >= policy.rank_threshold)


def _pair_blocks(problem: np.ndarray, n_problems: int) -> Iterator[tuple[np.ndarray, ...]]:
    """Every pair of the entries of each problem (``problem`` grouped), as blocks of problems with as many entries:
    the problems, their entries of a block of rows and of the columns from the block's first row on, and which
    (row, column) are a pair (column after row); about PAIRS_AT_ONCE (problem, row, column) a block."""
    size = np.bincount(problem, minlength=n_problems)
    start = np.cumsum(size) - size
    for k in np.unique(size[size >= 2]):
        problems = np.flatnonzero(size == k)
        rows = -(-k // 8)  # blocks of rows: about half the pairs of the square, each pair once
        chunks = -(-problems.size * rows * k // PAIRS_AT_ONCE)
        for chunk in np.array_split(problems, chunks):
            index = start[chunk, None] + np.arange(k)
            for first in range(0, k, rows):
                last = min(first + rows, k)
                later = np.arange(first, k)[None, None, :] > np.arange(first, last)[None, :, None]
                yield chunk, index[:, first:last], index[:, first:], later


@dataclass(frozen=True)
class _SignRule:
    """:func:`halving.apart_signs` at one rung, per entry and per problem: the pooled spread's bound (``scale``,
    the t quantile times the pooled standard deviation; NaN: no spread, the medians decide)."""

    log_mean: np.ndarray
    inverse_n: np.ndarray
    median: np.ndarray
    scale: np.ndarray
    problem: np.ndarray
    policy: HalvingPolicy

    @classmethod
    def of(
        cls,
        entries: _Entries,
        trials: RungTrials,
        rung: int,
        repeat: np.ndarray,
        n_problems: int,
        policy: HalvingPolicy,
    ) -> _SignRule:
        if trials.log_mean is None or trials.log_ssd is None:
            raise ValueError("a rank check needs the trials' log means and sums of squares")
        at = (entries.config, rung, repeat)
        count = trials.count[at]
        df = np.bincount(entries.problem, weights=count - 1, minlength=n_problems).astype(int)
        ssd = np.bincount(entries.problem, weights=trials.log_ssd[at], minlength=n_problems)  # in order, as sum()
        dfs, which = np.unique(df, return_inverse=True)
        quantile = np.array([_t_ppf(policy.confidence, int(d)) if d >= 1 else np.nan for d in dfs])[which]
        with np.errstate(invalid="ignore", divide="ignore"):
            scale = np.where(df >= 1, quantile * np.sqrt(ssd / np.maximum(df, 1)), np.nan)
        return cls(trials.log_mean[at], 1 / count, trials.median_s[at], scale, entries.problem, policy)

    def apart(self, rows: np.ndarray, columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per problem (a row of both), whether entries ``rows[:, i]`` and ``columns[:, j]`` are confidently apart and
        whether the first's time is above the second's: problems x rows x columns each."""
        scale = self.scale[self.problem[rows[:, 0]]]
        spread = ~np.isnan(scale)
        if spread.all():
            i, j = rows[:, :, None], columns[:, None, :]
            difference = self.log_mean[i] - self.log_mean[j]
            margin = scale[:, None, None] * np.sqrt(self.inverse_n[i] + self.inverse_n[j])
            return np.abs(difference) - margin > math.log1p(self.policy.tie_rel), difference > 0
        shape = (rows.shape[0], rows.shape[1], columns.shape[1])
        apart, above = np.zeros(shape, dtype=bool), np.zeros(shape, dtype=bool)
        if spread.any():
            i, j = rows[spread][:, :, None], columns[spread][:, None, :]
            difference = self.log_mean[i] - self.log_mean[j]
            margin = scale[spread][:, None, None] * np.sqrt(self.inverse_n[i] + self.inverse_n[j])
            apart[spread] = np.abs(difference) - margin > math.log1p(self.policy.tie_rel)
            above[spread] = difference > 0
        if not spread.all():  # every trial alone: the medians, apart by more than tie_rel times the smaller
            i, j = rows[~spread][:, :, None], columns[~spread][:, None, :]
            difference = self.median[i] - self.median[j]
            tied = np.abs(difference) <= self.policy.tie_rel * np.minimum(self.median[i], self.median[j])
            apart[~spread], above[~spread] = ~tied, difference > 0
        return apart, above


@lru_cache(maxsize=4096)
def _t_ppf(confidence: float, df: int) -> float:
    return float(stats.t.ppf(confidence, df))

"""Many races at once: :class:`sweeper.search.race.RaceState`'s decisions, vectorised for replay, whose repeats
each race every (model point, rung) of a sweep on resampled trials.

Rows are repeats; columns are items, the configurations of a race, grouped by race (``starts``: where each race's
items begin). Every trial is ``ok`` (replay resamples ok times), so the trials taken are the times held, and a race
decides once every configuration still in it took what its look wants, as :func:`sweeper.search.race.run_race`'s.
"""

from __future__ import annotations

import numpy as np

from sweeper.search.race import FAR_SLOWER, FAR_SLOWER_DF, RacePolicy, decision_quantile, scouts


class RaceBatch:
    """Races (rows x races) over their items: per (row, item) the trials taken, the decision it left the race at (0:
    still in it), whether it rests; per (row, race) its decisions so far, whether settled, its leader (an item; -1:
    none yet), whether it measures every remaining trial (``auto``'s choice)."""

    def __init__(self, draws: np.ndarray, starts: np.ndarray, policy: RacePolicy) -> None:
        """``draws[row, item, trial]``: the times each item takes, in order; ``starts``: each race's first item."""
        rows, items, _ = draws.shape
        self.draws, self.starts, self.policy = draws, starts, policy
        self.race = np.repeat(np.arange(starts.size), np.diff(np.r_[starts, items]))
        self.schedule = np.array(policy.schedule)
        self.taken = np.zeros((rows, items), dtype=int)
        self.left_at = np.zeros((rows, items), dtype=int)
        self.resting = np.zeros((rows, items), dtype=bool)
        self.rounds = np.zeros((rows, starts.size), dtype=int)
        self.settled = np.zeros((rows, starts.size), dtype=bool)
        self.leader = np.full((rows, starts.size), -1)
        self.measuring_all = np.zeros((rows, starts.size), dtype=bool)
        sizes = np.diff(np.r_[starts, items])
        self.scouting = np.tile([scouts(int(size), policy) for size in sizes], (rows, 1))
        self.scouted = np.zeros((rows, starts.size), dtype=bool)

    def any_of(self, values: np.ndarray) -> np.ndarray:
        """Per (row, race): whether ``values`` holds for any of its items."""
        return np.asarray(np.logical_or.reduceat(values, self.starts, axis=1))

    def done(self) -> np.ndarray:
        """:attr:`RaceState.done` per (row, race)."""
        open_ = (self.left_at == 0) & (self.taken < self.policy.max_trials)
        return np.where(self.measuring_all, ~self.any_of(open_), self.settled | ~self.any_of(open_ & ~self.resting))

    def wanted(self) -> np.ndarray:
        """:meth:`RaceState.wanted` per (row, item)."""
        most = self.policy.max_trials - self.taken
        level = np.where(self.scouting, 1, self.schedule[np.minimum(self.rounds, self.schedule.size - 1)])
        wanted = np.where(self.measuring_all[:, self.race], most, np.clip(level[:, self.race] - self.taken, 0, most))
        blocked = self.done()[:, self.race] | (self.left_at > 0) | self.resting | (most <= 0)
        waiting = self.far_slower() & ~self.measuring_all[:, self.race]
        return np.where(blocked | waiting, 0, wanted)

    def far_slower(self) -> np.ndarray:
        """:meth:`RaceState.far_slower` per (row, item)."""
        scout = np.where((self.left_at == 0) & (self.taken > 0), self.draws[:, :, 0], np.inf)
        fastest = np.minimum.reduceat(scout, self.starts, axis=1)
        slower = scout >= FAR_SLOWER * fastest[:, self.race]
        others = np.add.reduceat((self.left_at == 0) & ~slower, self.starts, axis=1)
        waits = self.scouted & (self.rounds == 0) & (others * (self.policy.min_trials - 1) >= FAR_SLOWER_DF)
        return np.asarray(waits[:, self.race] & slower)

    def take(self, rows: np.ndarray, items: np.ndarray, trials: np.ndarray) -> np.ndarray:
        """``trials`` more of each (row, item); the seconds each one's took."""
        start = self.taken[rows, items]
        order = np.arange(self.draws.shape[2])
        taking = (order >= start[:, None]) & (order < (start + trials)[:, None])
        self.taken[rows, items] = start + trials
        return np.asarray(np.where(taking, self.draws[rows, items], 0.0).sum(axis=1))

    def rest_s(self, rows: np.ndarray, items: np.ndarray) -> np.ndarray:
        """:meth:`RaceState.rest_s` of each (row, item)."""
        taken = self.taken[rows, items]
        median = np.zeros(taken.size)
        for n in np.unique(taken[taken > 0]):
            at = taken == n
            median[at] = np.median(self.draws[rows[at], items[at], :n], axis=1)
        return (self.policy.max_trials - taken) * median

    def measure_all(self, rows: np.ndarray) -> None:
        """:meth:`RaceState.measure_all` of every race of ``rows``."""
        chosen = np.zeros_like(self.measuring_all)
        chosen[rows] = True
        chosen &= ~self.done()
        self.measuring_all |= chosen
        self.resting &= ~chosen[:, self.race]

    def decide(self, deciding: np.ndarray) -> None:
        """:meth:`RaceState.decide` of the (row, race) ``deciding`` (see :func:`sweeper.search.race.race_round`); the
        first of each race only marks its scouts taken."""
        scouting = deciding & self.scouting
        self.scouted |= scouting
        self.scouting &= ~scouting
        deciding = deciding & ~scouting
        self.rounds += deciding
        alive = deciding[:, self.race] & (self.left_at == 0)
        log_mean, scale = self._spread(deciding)
        racing = np.add.reduceat(alive, self.starts, axis=1)
        compared = ~np.isnan(scale)
        leader = self._leaders(alive, log_mean)
        leaving, unsure, cleared = self._against_leader(alive & compared[:, self.race], leader, log_mean, scale)
        self.left_at = np.where(leaving, self.rounds[:, self.race], self.left_at)
        self.resting = np.where(deciding[:, self.race], cleared, self.resting)
        settled = (racing == 1) | (compared & ~self.any_of(unsure))
        self.settled = np.where(deciding, settled, self.settled)
        self.leader = np.where(deciding, leader, self.leader)

    def _spread(self, deciding: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per (row, item) of the ``deciding`` races: its mean log time; per (row, race): the t quantile of its
        comparisons times the spread pooled over every configuration with a time (NaN: no comparison)."""
        held = deciding[:, self.race] & (self.taken > 0)
        log_mean, log_ssd = self._log_moments(held)
        rows, races = self.rounds.shape
        bins, left_at, log_ssd = (np.arange(rows)[:, None] * races + self.race)[held], self.left_at[held], log_ssd[held]
        if left_at.any():  # those still in first, then in the order they left, as RaceState adds them up
            order = np.lexsort((left_at, bins))
            bins, log_ssd = bins[order], log_ssd[order]
        ssd = np.bincount(bins, weights=log_ssd, minlength=rows * races).reshape(rows, races)
        df = np.add.reduceat(np.where(held, self.taken - 1, 0), self.starts, axis=1)
        racing = np.add.reduceat(held & (self.left_at == 0), self.starts, axis=1)
        compared = deciding & (racing > 1) & (df >= 1)
        scale = np.full((rows, races), np.nan)
        if compared.any():
            key = racing[compared] * (int(df.max()) + 1) + df[compared]
            unique, inverse = np.unique(key, return_inverse=True)
            span = int(df.max()) + 1
            quantile = np.array([decision_quantile(self.policy, int(k // span), int(k % span)) for k in unique])
            scale[compared] = quantile[inverse] * np.sqrt(ssd[compared] / df[compared])
        return log_mean, scale

    def _log_moments(self, held: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per (row, item) of ``held``: the mean of its times' logarithms and their sum of squares around it."""
        mean, ssd = np.zeros(held.shape), np.zeros(held.shape)
        rows, items = np.nonzero(held)
        taken = self.taken[rows, items]
        for n in np.unique(taken):
            at = (rows[taken == n], items[taken == n])
            logs = np.log(self.draws[at][:, :n])
            centre = logs.mean(axis=1)
            mean[at], ssd[at] = centre, ((logs - centre[:, None]) ** 2).sum(axis=1)
        return mean, ssd

    def _leaders(self, alive: np.ndarray, log_mean: np.ndarray) -> np.ndarray:
        """Per (row, race): its item still in the race of least mean log time (the first of equals; -1: none)."""
        means = np.where(alive, log_mean, np.inf)
        least = np.minimum.reduceat(means, self.starts, axis=1)
        items = self.taken.shape[1]
        first = np.where(alive & (means == least[:, self.race]), np.arange(items), items)
        leader = np.minimum.reduceat(first, self.starts, axis=1)
        return np.where(leader < items, leader, -1)

    def _against_leader(
        self, compared: np.ndarray, leader: np.ndarray, log_mean: np.ndarray, scale: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each compared item but the leader, per (row, item): whether it leaves (confidently more than delta slower
        than the leader), whether the leader may still be more than delta slower than it, or it rests (cleared)."""
        lead = np.maximum(leader[:, self.race], 0)
        other = compared & (lead != np.arange(self.taken.shape[1]))
        gap = log_mean - np.take_along_axis(log_mean, lead, axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            inverse = 1 / self.taken + 1 / np.take_along_axis(self.taken, lead, axis=1)
            margin = scale[:, self.race] * np.sqrt(inverse)
            leaving = other & (gap - margin > self.policy.delta_log)
            unsure = other & ~leaving & (margin - gap >= self.policy.delta_log)
        return leaving, unsure, other & ~leaving & ~unsure

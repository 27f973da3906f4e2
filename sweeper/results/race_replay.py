"""Replay racing (:mod:`sweeper.search.race`) on a sweep measured in full.

Every (model point, rung value) is a race of its configurations. Per repeat, each configuration's
trials at each point are a bootstrap resample of its recorded ok times, taken in order. Decisions
come in looks; at each look, every launch with a configuration still wanting trials is visited
once: it is charged its start, warm-up and teardown (its first visit as the rows record them, a visit after
that as a warm node's start, :func:`sweeper.search.accounting.warm_launch_s`), takes its trials of the look, and
then, when measuring every trial its configurations may still need costs no more
than coming back (:func:`sweeper.search.race.stays`), takes them all at once.

The repeats run together, a block at a time (:class:`sweeper.search.race_batch.RaceBatch`): a look is a few array
operations over (repeats x configurations), however many races and configurations there are.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from sweeper.search.race import RacePolicy, RaceState
from sweeper.search.race_batch import RaceBatch
from sweeper.search.race_choice import choose

AUTO_CONTINUATIONS = 8  # per repeat: a replay takes hundreds of repeats, a run one choice of 64
TIMES_AT_ONCE = 1 << 21  # resampled times of a block of repeats held at once (8 bytes each)


@dataclass(frozen=True)
class RaceItems:
    """Every (model point, rung) of a replay as a race of its configurations, the items, in the order (point, rung,
    configuration): where each race's items begin, each point's race at the largest rung, and per item its launch
    (numbered 0..), nodes and recorded ok times (``times[first : first + count]``)."""

    starts: np.ndarray
    last: np.ndarray
    launch: np.ndarray
    nodes: np.ndarray
    first: np.ndarray
    count: np.ndarray
    times: np.ndarray


@dataclass(frozen=True)
class Visits:
    """Per launch, node-seconds of a visit's start, warm-up and teardown: its first (as recorded) and any after."""

    first_s: np.ndarray
    again_s: np.ndarray


@dataclass(frozen=True)
class RaceRepeats:
    """Every repeat: each point's choice (a configuration of its race at the largest rung) and whether that race
    settled (repeats x points), the node-seconds spent, whether ``auto`` measured everything at once after the
    first look; and the trials taken in all."""

    choices: np.ndarray
    settled: np.ndarray
    spent_s: np.ndarray
    all_at_once: np.ndarray
    trials_taken: int


def race_repeats(
    items: RaceItems,
    visit_s: Visits,
    policy: RacePolicy,
    repeats: int,
    rng: np.random.Generator,
    auto: bool = False,
) -> RaceRepeats:
    """``repeats`` repeats of every race, ``visit_s`` a visit's overhead per launch (node-seconds); ``auto``: after the
    first decision, race on or measure everything at once as ``auto`` chooses (:mod:`sweeper.search.race_choice`,
    from :data:`AUTO_CONTINUATIONS` simulated continuations)."""
    block = max(1, TIMES_AT_ONCE // (items.launch.size * policy.max_trials))
    parts = [
        _block(items, visit_s, policy, min(block, repeats - start), rng, auto) for start in range(0, repeats, block)
    ]
    choices, settled, spent_s, at_once = (
        np.concatenate([getattr(part, name) for part in parts])
        for name in ("choices", "settled", "spent_s", "all_at_once")
    )
    return RaceRepeats(choices, settled, spent_s, at_once, sum(part.trials_taken for part in parts))


def _block(
    items: RaceItems, visit_s: Visits, policy: RacePolicy, rows: int, rng: np.random.Generator, auto: bool
) -> RaceRepeats:
    """``rows`` repeats at once."""
    draws, seeds = _draws(items, policy.max_trials, rows, rng, auto)
    batch = RaceBatch(draws, items.starts, policy)
    spent, all_at_once = np.zeros(rows), np.zeros(rows, dtype=bool)
    chosen, charged_s = False, visit_s.first_s
    while _look(batch, items, (charged_s, visit_s.again_s), spent):
        charged_s = visit_s.again_s
        if auto and not chosen and batch.rounds.any():  # after the first decision (a look may take only scouts)
            chosen, all_at_once = True, _measure_all_at_once(batch, items, visit_s.again_s, seeds)
    leader = batch.leader[:, items.last]
    choices = np.where(leader >= 0, leader - items.starts[items.last], 0)
    return RaceRepeats(choices, batch.settled[:, items.last], spent, all_at_once, int(batch.taken.sum()))


def _draws(
    items: RaceItems, trials: int, rows: int, rng: np.random.Generator, auto: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Each repeat's resample (``trials`` per item, item after item) and, for ``auto``, the seed of its choice: drawn
    in the order one repeat after another draws them."""
    draws, seeds = np.empty((rows, items.launch.size, trials)), np.zeros(rows, dtype=np.int64)
    for row in range(rows):
        draws[row] = items.times[items.first[:, None] + picks(rng, items.count[:, None], (items.launch.size, trials))]
        if auto:
            seeds[row] = rng.integers(2**31)
    return draws, seeds


def _look(batch: RaceBatch, items: RaceItems, visit_s: tuple[np.ndarray, np.ndarray], spent: np.ndarray) -> bool:
    """One look of every repeat: each launch with an item wanting trials visited (charged ``visit_s[0]``), what it
    takes, the races decided; False when no repeat has anything left to take. A launch stays for every trial it may
    still need where they cost no more than coming back (``visit_s[1]``)."""
    charged_s, again_s = visit_s
    wanted = batch.wanted()
    rows, columns = np.nonzero(wanted)
    if rows.size == 0:
        return False
    launches = again_s.size
    visit = rows * launches + items.launch[columns]  # (repeat, launch)
    visited = np.bincount(visit, minlength=spent.size * launches).reshape(spent.size, launches) > 0
    spent += visited @ charged_s
    nodes = items.nodes[columns]
    spent += np.bincount(rows, weights=batch.take(rows, columns, wanted[rows, columns]) * nodes, minlength=spent.size)
    rest_s = np.bincount(visit, weights=batch.rest_s(rows, columns) * nodes, minlength=visited.size)  # item by item
    stay = (rest_s <= np.tile(again_s, spent.size))[visit]  # sweeper.search.race.stays, launch by launch
    rows, columns, nodes = rows[stay], columns[stay], nodes[stay]
    rest = batch.policy.max_trials - batch.taken[rows, columns]
    spent += np.bincount(rows, weights=batch.take(rows, columns, rest) * nodes, minlength=spent.size)
    batch.decide(batch.any_of(wanted > 0) & ~batch.measuring_all)
    return True


def _measure_all_at_once(batch: RaceBatch, items: RaceItems, visit_s: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """``auto``'s choice after the first look, per repeat, on the races keyed by launch as a run holds them; True
    (and every race of the repeat set to measure its remaining trials) where everything at once is expected to cost
    less."""
    launch_nodes = {int(launch): int(nodes) for launch, nodes in zip(items.launch, items.nodes, strict=True)}
    seconds = {launch: float(visit_s[launch]) / count for launch, count in launch_nodes.items()}  # per node
    chosen = np.zeros(seeds.size, dtype=bool)
    for row, seed in enumerate(seeds):
        states = _states(batch, items, row)
        choice = choose(states, seconds, launch_nodes, repeats=AUTO_CONTINUATIONS, seed=int(seed))
        chosen[row] = not choice.race
    batch.measure_all(np.flatnonzero(chosen))
    return chosen


def _states(batch: RaceBatch, items: RaceItems, row: int) -> dict[int, RaceState[int]]:
    """Repeat ``row``'s races as :class:`RaceState` keyed by launch."""
    states = {}
    bounds = np.r_[items.starts, items.launch.size]
    for race, (start, end) in enumerate(pairwise(bounds)):
        span = range(int(start), int(end))
        launch = {item: int(items.launch[item]) for item in span}
        left = sorted((int(batch.left_at[row, item]), item) for item in span if batch.left_at[row, item])
        states[race] = RaceState(
            {launch[item]: batch.draws[row, item, : batch.taken[row, item]].tolist() for item in span},
            {launch[item]: int(batch.taken[row, item]) for item in span},
            batch.policy,
            {launch[item]: at for at, item in left},
            {launch[item] for item in span if batch.resting[row, item]},
            int(batch.rounds[row, race]),
            bool(batch.settled[row, race]),
            scouted=bool(batch.scouted[row, race]),
        )
    return states


def picks(rng: np.random.Generator, count: np.ndarray, size: tuple[int, ...]) -> np.ndarray:
    """``rng.integers(0, count, size)``: indices into recorded times, ``count`` broadcast to ``size``; the same
    numbers drawn faster where every count is equal."""
    if count.size and np.all(count == count.flat[0]):
        return rng.integers(0, int(count.flat[0]), size=size)
    return rng.integers(0, count, size=size)

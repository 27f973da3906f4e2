"""Replay racing (:mod:`sweeper.search.race`) on a sweep measured in full.

Every (model point, rung value) is a race of its configurations. Per repeat, each configuration's
trials at each point are a bootstrap resample of its recorded ok times, taken in order. Decisions
come in looks; at each look, every launch with a configuration still wanting trials is visited
once: it is charged its start, warm-up and teardown as the rows record them, takes its trials of
the look, and then, when measuring every trial its configurations may still need costs no more
than coming back (:func:`sweeper.search.race.stays`), takes them all at once.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from sweeper.search.race import RacePolicy, RaceState, stays
from sweeper.search.race_choice import choose

RaceKey = tuple[int, int]  # (race, rung)
AUTO_CONTINUATIONS = 8  # per repeat: a replay takes hundreds of repeats, a run one choice of 64


@dataclass
class RaceRepeat:
    """One repeat of every race: the choice of each race at the largest rung, what it cost, trials per point."""

    choices: list[int] = field(default_factory=list)
    spent_s: float = 0.0
    trials: list[int] = field(default_factory=list)
    settled: list[bool] = field(default_factory=list)
    all_at_once: bool = False  # auto chose, after the first look, to measure every remaining trial at once


class _Repeat:
    """The races of one repeat: resampled trials, the states, what was spent."""

    def __init__(self, samples: Sequence[list[list[np.ndarray]]], policy: RacePolicy, rng: np.random.Generator) -> None:
        self.policy = policy
        self.draws: dict[tuple[int, int, int], np.ndarray] = {}
        self.states: dict[RaceKey, RaceState[int]] = {}
        for r, race in enumerate(samples):
            for g in range(len(race[0])):
                self.states[(r, g)] = RaceState.start(range(len(race)), policy)
                for c, per_rung in enumerate(race):
                    recorded = per_rung[g]
                    self.draws[(r, g, c)] = recorded[rng.integers(0, recorded.size, size=policy.max_trials)]

    def take(self, key: RaceKey, c: int, trials: int) -> float:
        """``trials`` more of configuration ``c`` in race ``key``; their seconds."""
        state = self.states[key]
        taken = self.draws[(*key, c)][state.taken[c] : state.taken[c] + trials]
        for time_s in taken:
            state.record(c, float(time_s))
        return float(taken.sum())


def race_repeat(
    samples: Sequence[list[list[np.ndarray]]],
    launches: Sequence[np.ndarray],
    nodes: Sequence[np.ndarray],
    visit_s: np.ndarray,
    policy: RacePolicy,
    rng: np.random.Generator,
    auto: bool = False,
) -> RaceRepeat:
    """One repeat: ``samples[race][configuration][rung]`` recorded times, ``launches[race][configuration, rung]``
    the launch that measured them, ``nodes[race][configuration]``, ``visit_s[launch]`` a visit's overhead
    (node-seconds); ``auto``: after the first look, race on or measure everything at once as ``auto`` chooses
    (:mod:`sweeper.search.race_choice`, from :data:`AUTO_CONTINUATIONS` simulated continuations)."""
    repeat = _Repeat(samples, policy, rng)
    result = RaceRepeat()
    looks = 0
    while True:
        wants: dict[int, list[tuple[RaceKey, int]]] = defaultdict(list)
        for key, state in repeat.states.items():
            for c in state.alive:
                if state.wanted(c) > 0:
                    wants[int(launches[key[0]][c, key[1]])].append((key, c))
        if not wants:
            break
        for launch, items in wants.items():
            result.spent_s += float(visit_s[launch])
            for key, c in items:
                result.spent_s += repeat.take(key, c, repeat.states[key].wanted(c)) * nodes[key[0]][c]
            rest = [(key, c, repeat.states[key].rest_s(c) * nodes[key[0]][c]) for key, c in items]
            if stays(float(visit_s[launch]), sum(cost for _, _, cost in rest)):
                for key, c, _ in rest:
                    left = policy.max_trials - len(repeat.states[key].times_s[c])
                    result.spent_s += repeat.take(key, c, left) * nodes[key[0]][c]
        for key in {key for items in wants.values() for key, _ in items}:
            repeat.states[key].decide()
        looks += 1
        if auto and looks == 1:
            result.all_at_once = _measure_all_at_once(repeat, launches, nodes, visit_s, rng)
    last = {r: max(g for rr, g in repeat.states if rr == r) for r, _ in repeat.states}
    for (r, g), state in repeat.states.items():
        result.trials += [len(times) for times in state.times_s.values()]
        if g == last[r]:
            result.choices.append(int(state.leader) if state.leader is not None else 0)
            result.settled.append(state.settled)
    return result


def _measure_all_at_once(
    repeat: _Repeat,
    launches: Sequence[np.ndarray],
    nodes: Sequence[np.ndarray],
    visit_s: np.ndarray,
    rng: np.random.Generator,
) -> bool:
    """``auto``'s choice after the first look, on the races keyed by launch as a run holds them; True (and every
    race set to measure its remaining trials) where measuring everything at once is expected to cost less."""
    by_launch: dict[RaceKey, RaceState[int]] = {}
    launch_nodes: dict[int, int] = {}
    for (r, g), state in repeat.states.items():
        launch_of = {c: int(launches[r][c, g]) for c in state.times_s}
        launch_nodes |= {launch_of[c]: int(nodes[r][c]) for c in state.times_s}
        by_launch[(r, g)] = RaceState(
            {launch_of[c]: list(times) for c, times in state.times_s.items()},
            {launch_of[c]: taken for c, taken in state.taken.items()},
            state.policy,
            {launch_of[c]: at for c, at in state.left_at.items()},
            {launch_of[c] for c in state.resting},
            state.rounds,
            state.settled,
        )
    seconds = {launch: float(visit_s[launch]) / count for launch, count in launch_nodes.items()}  # per node
    choice = choose(by_launch, seconds, launch_nodes, repeats=AUTO_CONTINUATIONS, seed=int(rng.integers(2**31)))
    if not choice.race:
        for state in repeat.states.values():
            state.measure_all()
    return not choice.race

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

RaceKey = tuple[int, int]  # (race, rung)


@dataclass
class RaceRepeat:
    """One repeat of every race: the choice of each race at the largest rung, what it cost, trials per point."""

    choices: list[int] = field(default_factory=list)
    spent_s: float = 0.0
    trials: list[int] = field(default_factory=list)
    settled: list[bool] = field(default_factory=list)


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
) -> RaceRepeat:
    """One repeat: ``samples[race][configuration][rung]`` recorded times, ``launches[race][configuration, rung]``
    the launch that measured them, ``nodes[race][configuration]``, ``visit_s[launch]`` a visit's overhead."""
    repeat = _Repeat(samples, policy, rng)
    result = RaceRepeat()
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
    last = {r: max(g for rr, g in repeat.states if rr == r) for r, _ in repeat.states}
    for (r, g), state in repeat.states.items():
        result.trials += [len(times) for times in state.times_s.values()]
        if g == last[r]:
            result.choices.append(int(state.leader) if state.leader is not None else 0)
            result.settled.append(state.settled)
    return result

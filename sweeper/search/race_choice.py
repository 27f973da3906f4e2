"""``search.strategy: auto``, after the race's first round: race on, or measure every remaining trial at once.

Racing saves the trials a decision does not need, but each further look may start launches again. What the
first round measured says which costs less: each configuration's times and every race's spread, and each
launch's start, staging and warm-up. The expected node-seconds of racing on are the mean over simulated
continuations (each configuration's true log-time drawn around its measured mean with the race's pooled spread,
its future trials around that), visited as the run visits them (:func:`sweeper.search.race.stays`). Measuring
every remaining trial of the configurations still in each race costs one more visit to each launch that has
any. Successive halving is no candidate here: its first rung measures other points.
"""

from __future__ import annotations

import copy
import math
from collections import defaultdict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from sweeper.search.race import RaceState, stays
from sweeper.search.spread import pooled_log_sd

P = TypeVar("P", bound=Hashable)
REPEATS = 64  # simulated continuations
FALLBACK_SPREAD = 0.05  # log-time spread where a race has no repeated trial to measure one


@dataclass(frozen=True)
class Choice:
    """The expected node-seconds of what is left, racing on and measuring everything at once; or, resuming a race
    whose first round an earlier run measured, the choice ``kept`` from it (racing on: True)."""

    race_s: float
    all_at_once_s: float
    repeats: int
    kept: bool | None = None

    @classmethod
    def resumed(cls, race: bool) -> Choice:
        """The choice of the run that measured the first round, as the rows after it show (racing on where none do):
        its start costs are not in the store, so it is kept rather than made again."""
        return cls(math.nan, math.nan, 0, race)

    @property
    def race(self) -> bool:
        return self.kept if self.kept is not None else self.race_s <= self.all_at_once_s

    def text(self) -> str:
        if self.kept is not None:
            chosen = "racing on" if self.kept else "measuring every remaining trial now, no more decisions"
            return f"auto, after the first round (measured by an earlier run of this sweep): {chosen}, kept from it"
        if self.race_s == self.all_at_once_s == 0:
            return (
                "auto, after the first round: nothing left to choose (every race ended in it, or every launch took "
                "all its trials at its first start, a start costing more than the rest of them)"
            )
        chosen = "racing on" if self.race else "measuring every remaining trial now, no more decisions"
        return (
            f"auto, after the first round: {chosen}; expected cluster time of the rest: racing on "
            f"{self.race_s:,.0f} node-s (mean of {self.repeats} continuations simulated from the first round's "
            f"times), everything at once {self.all_at_once_s:,.0f} node-s"
        )


def choose(
    races: Mapping[P, RaceState[int]],
    visit_s: Mapping[int, float],
    nodes: Mapping[int, int],
    repeats: int = REPEATS,
    seed: int = 0,
) -> Choice:
    """Racing on or everything at once, for races keyed by point whose configurations are launch indices;
    ``visit_s[launch]``: a start's seconds (start, staging, warm-up), ``nodes[launch]``: its nodes."""
    rng = np.random.default_rng(seed)
    simulated = [_race_on_s(races, visit_s, nodes, rng) for _ in range(repeats)]
    return Choice(float(np.mean(simulated)), _all_at_once_s(races, visit_s, nodes), repeats)


def _all_at_once_s(races: Mapping[P, RaceState[int]], visit_s: Mapping[int, float], nodes: Mapping[int, int]) -> float:
    spent, visited = 0.0, set()
    for state in races.values():
        if state.done:
            continue
        for launch in state.alive:
            if not state.exhausted(launch):
                spent += state.rest_s(launch) * nodes[launch]
                visited.add(launch)
    return spent + sum(visit_s[launch] * nodes[launch] for launch in visited)


def _race_on_s(
    races: Mapping[P, RaceState[int]], visit_s: Mapping[int, float], nodes: Mapping[int, int], rng: np.random.Generator
) -> float:
    """One simulated continuation of every race from where it stands; the node-seconds it took."""
    states = {point: copy.deepcopy(state) for point, state in races.items()}
    laws = {point: _laws(state, rng) for point, state in states.items()}
    spent = 0.0
    while True:
        wants: dict[int, list[P]] = defaultdict(list)
        for point, state in states.items():
            for launch in state.alive:
                if state.wanted(launch) > 0:
                    wants[launch].append(point)
        if not wants:
            return spent
        for launch, points in wants.items():
            spent += visit_s[launch] * nodes[launch]
            for point in points:
                spent += _take(states[point], launch, states[point].wanted(launch), laws[point], rng) * nodes[launch]
            if stays(visit_s[launch], sum(states[point].rest_s(launch) for point in points)):
                for point in points:
                    left = states[point].policy.max_trials - states[point].taken[launch]
                    spent += _take(states[point], launch, left, laws[point], rng) * nodes[launch]
        for point in {point for points in wants.values() for point in points}:
            states[point].decide()


def _laws(state: RaceState[int], rng: np.random.Generator) -> dict[int, tuple[float, float]]:
    """Each configuration's drawn true mean log-time and the race's spread (log seconds)."""
    logs = {launch: np.log(np.asarray(times, dtype=float)) for launch, times in state.times_s.items() if times}
    pooled, df = pooled_log_sd(logs.values())
    spread = pooled if df else FALLBACK_SPREAD
    overall = float(np.mean([v.mean() for v in logs.values()])) if logs else 0.0
    return {
        launch: (
            float(logs[launch].mean() + rng.normal(0, spread / math.sqrt(logs[launch].size)))
            if launch in logs
            else overall,
            spread,
        )
        for launch in state.times_s
    }


def _take(
    state: RaceState[int], launch: int, trials: int, laws: dict[int, tuple[float, float]], rng: np.random.Generator
) -> float:
    mean, spread = laws[launch]
    times = np.exp(mean + spread * rng.standard_normal(trials))
    for time_s in times:
        state.record(launch, float(time_s))
    return float(times.sum())

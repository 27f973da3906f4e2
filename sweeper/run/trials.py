"""Which measurement a launch takes next: a fixed list, or trials decided one at a time.

A launch asks its queue for the next measurement, takes it, records its outcome, and asks again;
when it restarts (after a failed measurement), the queue hands out the same measurement until
it is recorded; a measurement taken under load (``disturbed``) is handed out again, up to
``workload.remeasure_disturbed`` times per point, and counts for nothing. :class:`FixedQueue` is a
list decided before the run (a fixed number of trials, a dry run). :class:`TrialQueue` measures each
point of the launch until :func:`sweeper.search.adaptive.decide` says stop: a fixed count, or
adaptive trials (``workload.trials: {min, max, target_rel_ci}``), giving the last row of a point its
``stop_reason``. Measurements already ``ok`` in the store count without being taken again.

A run visits its launches in rounds, each round's in a random order (:func:`one_round`, :func:`launch_order`:
:mod:`sweeper.search.interleaving`); a launch takes a fixed list in rounds of trials (:func:`interleaved`), trials
decided one at a time point after point, its points in a random order too (:func:`point_order`). Every row of a queue
carries its launch visit's round and place in its round (``visit``); the order within a visit is its rows'
``started_at``.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from sweeper.config.grid import Workload
from sweeper.names import BASELINE_ENGINE
from sweeper.planning.measurements import Todo, measurement_key
from sweeper.planning.plan import Launch, Plan, Point
from sweeper.search.adaptive import TrialPolicy, decide
from sweeper.search.interleaving import POINTS, in_random_order
from sweeper.store.row import SearchColumns, VisitColumns

BASELINE_ROUND = 0  # the single-thread baseline, a reference measured before the rounds
ONE_ROUND = 1  # a grid measured in one pass (fixed or adaptive trials) visits every other launch in one round


class LaunchQueue(Protocol):
    """The measurements of one launch, handed out one at a time."""

    def next(self) -> Todo | None:
        """The next measurement to take (the same one until it is recorded); None when done."""
        ...

    def record(self, item: Todo, ok_time_s: float | None, disturbed: bool = False) -> SearchColumns:
        """``item`` was taken (``ok_time_s``: its time, None unless ok; ``disturbed``: under load, see
        :mod:`sweeper.run.interference`); the columns its row gets from the queue."""
        ...

    def rest(self) -> list[Todo]:
        """Everything still to take, which ends the queue: the launch could not start, each gets a failed row."""
        ...

    def columns(self) -> SearchColumns:
        """The queue's own columns of any of its rows (``rung``)."""
        ...


class FixedQueue:
    """Measurements decided before the run, taken in order; a disturbed one is taken again, up to ``remeasure``
    times per point."""

    def __init__(self, items: Sequence[Todo], remeasure: int = 0, visit: VisitColumns | None = None) -> None:
        self.items = deque(items)
        self.remeasure = remeasure
        self.visit = visit or VisitColumns()
        self.extra: Counter[Point] = Counter()  # disturbed trials taken again, per point

    def next(self) -> Todo | None:
        return self.items[0] if self.items else None

    def record(self, item: Todo, ok_time_s: float | None, disturbed: bool = False) -> SearchColumns:
        if disturbed and self.extra[item.point] < self.remeasure:
            self.extra[item.point] += 1  # the same measurement again, under its key
        elif self.items and self.items[0] is item:
            self.items.popleft()
        return self.columns()

    def rest(self) -> list[Todo]:
        rest = list(self.items)
        self.items.clear()
        return rest

    def columns(self) -> SearchColumns:
        """The visit's place in the run's order (a fixed plan has no rungs)."""
        return SearchColumns(**self.visit)


def one_round(plan: Plan, items: Sequence[Todo]) -> list[tuple[VisitColumns, list[Todo]]]:
    """A grid measured in one pass, visit by visit (:func:`one_round_visits`), each launch's measurements
    :func:`interleaved`. Each launch keeps its draw whatever else is left, so a resumed run takes what is left in
    the order the stopped run would have."""
    by_launch: dict[int, list[Todo]] = {}
    for item in items:
        by_launch.setdefault(item.launch.index, []).append(item)
    return [
        (visit, interleaved(plan, by_launch[index], visit.get("visit_round") or 0))
        for visit, index in one_round_visits(plan, by_launch)
    ]


def one_round_visits(plan: Plan, indices: Iterable[int]) -> list[tuple[VisitColumns, int]]:
    """The launches ``indices`` of a grid measured in one pass, in the order visited: the single-thread baseline
    first (a reference, round 0, as a race and halving measure it), then the others in round 1's random order."""
    listed = list(indices)
    reference = [index for index in listed if plan.launches[index].engine == BASELINE_ENGINE]
    candidates = launch_order(plan, (index for index in listed if index not in reference), ONE_ROUND)
    visits = [(VisitColumns(visit_round=BASELINE_ROUND, visit_position=1), index) for index in reference]
    return visits + [(VisitColumns(visit_round=ONE_ROUND, visit_position=n), i) for n, i in enumerate(candidates, 1)]


def launch_order(plan: Plan, indices: Iterable[int], round_: int) -> list[int]:
    """The launches ``indices`` in round ``round_``'s random order (drawn from the grid's seed and the round)."""
    return in_random_order(indices, int, plan.grid.workload.seed, round_)


def point_order(plan: Plan, index: int, points: Iterable[Point], round_: int, *trial: int) -> list[Point]:
    """Launch ``index``'s ``points`` in a random order drawn from the grid's seed, the round, the launch (and the
    ``trial`` a fixed list takes them at), each ranked by its place in the plan's list of the launch's points."""
    place = {point: n for n, point in enumerate(plan.points[index])}
    return in_random_order(points, place.__getitem__, plan.grid.workload.seed, round_, POINTS, index, *trial)


def interleaved(plan: Plan, items: Sequence[Todo], round_: int) -> list[Todo]:
    """One launch's measurements (at round ``round_``) in rounds of trials: every point's trial 0, then every point's
    trial 1, ...; each trial's points in an order of its own (:func:`point_order`)."""
    by_trial: dict[int, dict[Point, Todo]] = {}
    for item in items:
        by_trial.setdefault(item.trial, {})[item.point] = item
    return [
        by_trial[trial][point]
        for trial in sorted(by_trial)
        for point in point_order(plan, items[0].launch.index, by_trial[trial], round_, trial)
    ]


def trial_policy(workload: Workload) -> TrialPolicy:
    """The grid's trials: adaptive (``{min, max, target_rel_ci}``) or a fixed count."""
    adaptive = workload.adaptive
    if adaptive is None:
        return TrialPolicy.fixed(workload.trials)
    return TrialPolicy(adaptive.min_trials, adaptive.max_trials, adaptive.target_rel_ci)


@dataclass
class PointTrials:
    """One point's trials so far: how many were taken, the ok times, whether it stopped."""

    point: Point
    taken: int = 0
    times_s: list[float] = field(default_factory=list)
    stopped: bool = False
    extra: int = 0  # disturbed trials taken again


class TrialQueue:
    """Each point of a launch, trial after trial, until the trial policy stops it; the points in the visit round's
    random order (:func:`point_order`)."""

    def __init__(
        self,
        plan: Plan,
        launch: Launch,
        points: Sequence[Point],
        done_s: Mapping[str, float | None],
        policy: TrialPolicy,
        rung: int | None = None,
        visit: VisitColumns | None = None,
    ) -> None:
        self.plan, self.launch, self.done_s, self.policy, self.rung = plan, launch, done_s, policy, rung
        self.visit = visit or VisitColumns()
        ordered = point_order(plan, launch.index, points, self.visit.get("visit_round") or 0)
        self.points = [PointTrials(point) for point in ordered]
        self.skipped = 0

    def next(self) -> Todo | None:
        for state in self.points:
            while not state.stopped:
                key = measurement_key(self.plan.grid, self.plan, self.launch, state.point, state.taken)
                if key not in self.done_s:
                    return Todo(self.launch, state.point, state.taken, key)
                self.skipped += 1
                self._count(state, self.done_s[key])
        return None

    def record(self, item: Todo, ok_time_s: float | None, disturbed: bool = False) -> SearchColumns:
        state = next(s for s in self.points if s.point == item.point)
        if disturbed and state.extra < self.plan.grid.workload.remeasure_disturbed:
            state.extra += 1  # not counted: the same trial again, under its key
            return self.columns()
        stop_reason = self._count(state, None if disturbed else ok_time_s)
        return SearchColumns(stop_reason=stop_reason, rung=self.rung, **self.visit)

    def rest(self) -> list[Todo]:
        items = [todo for todo in (self._next_of(s) for s in self.points) if todo is not None]
        for state in self.points:
            state.stopped = True
        return items

    def columns(self) -> SearchColumns:
        return SearchColumns(rung=self.rung, **self.visit)

    def medians_s(self) -> dict[Point, float]:
        """Each point's median ok time (NaN without one)."""
        return {s.point: _median(s.times_s) for s in self.points}

    def _next_of(self, state: PointTrials) -> Todo | None:
        if state.stopped:
            return None
        key = measurement_key(self.plan.grid, self.plan, self.launch, state.point, state.taken)
        return Todo(self.launch, state.point, state.taken, key)

    def _count(self, state: PointTrials, time_s: float | None) -> str | None:
        """One more trial of ``state`` (an ok one with its time); the stop reason when it stops there."""
        state.taken += 1
        if time_s is not None:
            state.times_s.append(time_s)
        decision = decide(state.times_s, self.policy, trials_taken=state.taken)
        state.stopped = not decision.keep_measuring
        return decision.stop_reason if state.stopped else None


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan

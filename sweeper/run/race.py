"""``search: {strategy: race}``: racing the configurations at every workload point, on real launches.

Each workload point (epochs, fraction, mode, model) is a race of every cluster launch that has it
(:mod:`sweeper.search.race` decides). The run goes in rounds: each launch with a configuration
still wanting trials is started once, takes its trials of the round at every such point, and,
when coming back would cost more than measuring everything it may still need
(:func:`sweeper.search.race.stays`, from this start's own start and warm-up seconds), takes that
at once. After a round every race decides. The single-thread baseline is a reference, not a
candidate: it is measured first, with the grid's trials. A configuration that stopped before its
most trials (it left the race, or the race settled) gets one ``pruned`` row saying so.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import numpy as np

from sweeper.config.grid import RACE_MIN_TRIALS
from sweeper.names import BASELINE_ENGINE, PRUNED
from sweeper.planning.measurements import Todo, measurement_key
from sweeper.planning.plan import Launch, Plan, Point
from sweeper.run.rows import RunRecord, measurement_row
from sweeper.run.trials import LaunchQueue, TrialQueue, trial_policy
from sweeper.search.race import LEFT, MAX_TRIALS_REACHED, RESTING, SETTLED, RacePolicy, RaceState, stays
from sweeper.search.race_choice import Choice, choose
from sweeper.store.row import Row, SearchColumns
from sweeper.workload.data import Data

RunLaunch = Callable[[Launch, LaunchQueue], Iterator[Row]]


def race_policy(plan: Plan) -> RacePolicy:
    """The grid's race: ``search.delta`` and ``confidence``; trials from 2 (or ``trials.min``) to the grid's most."""
    grid = plan.grid
    adaptive = grid.workload.adaptive
    first = max(RACE_MIN_TRIALS, adaptive.min_trials if adaptive else 0)
    most = grid.workload.trials
    return RacePolicy(grid.search.delta, grid.search.confidence, min(first, most), most)


@dataclass(frozen=True)
class Recorded:
    """What the store holds of a sweep before this run: ok times and the race decisions (``pruned`` rows' stop
    reasons and decisions), by measurement key."""

    done_s: Mapping[str, float]
    decided: Mapping[str, tuple[str, int]]


class RaceRun:
    """One race sweep: measures through ``run_launch``, hands each row to ``emit`` as it is written, and writes each
    round's decisions (``pruned`` rows) through ``decisions`` as they are made."""

    def __init__(
        self,
        plan: Plan,
        run_launch: RunLaunch,
        recorded: Recorded,
        emit: Callable[[Row], None],
        decisions: Callable[[list[Row]], None],
        run: RunRecord,
        data: Mapping[float, Data],
    ) -> None:
        self.plan, self.run_launch, self.recorded, self.emit = plan, run_launch, recorded, emit
        self.write_decisions, self.run_record, self.data = decisions, run, data
        self.policy = race_policy(plan)
        self.launches = {launch.index: launch for launch in plan.launches}
        self.races: dict[Point, RaceState[int]] = {}
        self.written: set[str] = set(recorded.decided)
        self.skipped = 0
        self.visit_s: dict[int, float] = {}  # each launch's start, staging and warm-up, as this run measured them
        self.choice: Choice | None = None  # auto's, after the first round
        for launch in plan.launches:
            if launch.engine == BASELINE_ENGINE:
                continue
            for point in plan.points[launch.index]:
                state = self.races.setdefault(point, RaceState.start((), self.policy))
                state.times_s[launch.index], state.taken[launch.index] = [], 0
                self._resume(state, launch.index, point)
        for state in self.races.values():
            state.resumed()

    def _key(self, index: int, point: Point, trial: int) -> str:
        return measurement_key(self.plan.grid, self.plan, self.launches[index], point, trial)

    def _resume(self, state: RaceState[int], index: int, point: Point) -> None:
        """Count the ok trials the store already holds up to the first missing one, and restore a decision an
        earlier run recorded for this configuration (a resumed race decides nothing again)."""
        done_s, decided = self.recorded.done_s, self.recorded.decided
        while (key := self._key(index, point, state.taken[index])) in done_s:
            state.record(index, done_s[key])
            self.skipped += 1
        for trial in range(state.taken[index], self.policy.max_trials + 1) if decided else ():
            found = decided.get(self._key(index, point, trial))  # a decision row stands at a trial not yet taken
            if found is not None:
                state.restore(index, *found)
                break

    def run(self) -> int:
        """Measure the baseline, then race round after round, writing each round's decisions; the rounds."""
        for launch in self.plan.launches:
            if launch.engine == BASELINE_ENGINE:
                trials = trial_policy(self.plan.grid.workload)
                queue = TrialQueue(self.plan, launch, self.plan.points[launch.index], self.recorded.done_s, trials)
                for row in self.run_launch(launch, queue):
                    self.emit(row)
                self.skipped += queue.skipped
        for state in self.races.values():  # a run stopped between a round's trials and its decisions
            if any(state.taken.values()) and not state.done and all(state.ready(key) for key in state.alive):
                state.decide()
        self.write_decisions(self.decision_rows())
        rounds = 0
        while wants := self._wanted():
            rounds += 1
            for index, points in wants.items():
                visit = RaceQueue(self, self.launches[index], points, rounds)
                for row in self.run_launch(self.launches[index], visit):
                    visit.observe(row)
                    self.emit(row)
                if visit.visit_s is not None:
                    self.visit_s.setdefault(index, visit.visit_s)
            for point in {point for points in wants.values() for point in points}:
                self.races[point].decide()
            self.write_decisions(self.decision_rows())
            if self.plan.grid.search.auto_reason and self.choice is None:
                self._choose()
        return rounds

    def _choose(self) -> None:
        """``auto``: race on, or measure every remaining trial now, whichever the first round expects cheaper."""
        known = list(self.visit_s.values())
        fallback = float(np.median(known)) if known else 0.0
        visit_s = {index: self.visit_s.get(index, fallback) for index in self.launches}
        nodes = {index: launch.nodes for index, launch in self.launches.items()}
        self.choice = choose(self.races, visit_s, nodes)
        if not self.choice.race:
            for state in self.races.values():
                state.measure_all()

    def _wanted(self) -> dict[int, list[Point]]:
        """The points each launch has trials to take at in the next round, launches in plan order."""
        wants: dict[int, list[Point]] = {}
        for point, state in self.races.items():
            for index in state.alive:
                if state.wanted(index) > 0:
                    wants.setdefault(index, []).append(point)
        return dict(sorted(wants.items()))

    def decision_rows(self) -> list[Row]:
        """A ``pruned`` row for each configuration and point that stopped before its most trials since the last
        call (it left the race, the race settled, or it ended unsettled with this one resting), saying why; none
        twice, none the store holds."""
        rows = []
        for point, state in self.races.items():
            leader = self._leader(state)
            for index in state.times_s:
                reason = state.stop_reason(index)
                if reason not in (LEFT, SETTLED, RESTING) or state.exhausted(index):
                    continue
                trial = state.taken[index]
                key = self._key(index, point, trial)
                if key in self.written:
                    continue
                self.written.add(key)
                rows.append(self._decision_row(point, state, index, trial, key, reason, leader))
        return rows

    def _leader(self, state: RaceState[int]) -> str:
        return self.launches[state.leader].label if state.leader is not None else "-"

    def _decision_row(
        self, point: Point, state: RaceState[int], index: int, trial: int, key: str, reason: str, leader: str
    ) -> Row:
        decided = state.left_at.get(index, state.rounds)
        delta = f"{self.policy.delta:.0%}"
        why = (
            f"left the race at decision {decided}: confidently more than {delta} slower than {leader}"
            if reason == LEFT
            else f"the race settled at decision {decided}: {leader} is within {delta} of every configuration "
            "still in it"
            if reason == SETTLED
            else f"the race ended unsettled at decision {decided}; {leader} is within {delta} of this one"
        )
        todo = Todo(self.launches[index], point, trial, key)
        search = SearchColumns(stop_reason=reason, race_round=decided)
        outcome = self.run_record.outcome(PRUNED, why)
        return measurement_row(
            self.plan, todo, self.run_record, self.data[point.fraction], outcome=outcome, search=search
        )

    def lines(self) -> list[str]:
        """What each race decided, for the end of ``sweeper run``."""
        several = len({(point.mode, point.params) for point in self.races}) > 1
        lines = [self.choice.text()] if self.choice is not None else []
        for point, state in self.races.items():
            alive = [self.launches[index].label for index in state.alive]
            text = f"epochs {point.epochs}" + (f", fraction {point.fraction:g}" if point.fraction != 1 else "")
            if several:
                text += f", {point.mode} {json.dumps(point.model_params, sort_keys=True, default=list)}"
            if state.settled:
                leader = self._leader(state)
                ended = f"settled after {state.rounds} decision(s): {leader} is within {self.policy.delta:.0%} of "
                ended += f"every configuration still in it ({', '.join(alive)})"
            else:
                how = "measured in full after auto's choice" if state.measuring_all else "not settled"
                ended = f"{how} at its most trials; still in it: {', '.join(alive)}"
            lines.append(f"{text}: {ended}; {len(state.left_at)} left")
        return lines


class RaceQueue:
    """One visit of a launch: its trials of the round at each point, then, where staying is cheaper than coming
    back, every trial its configurations may still need."""

    def __init__(self, run: RaceRun, launch: Launch, points: list[Point], round_: int) -> None:
        self.run, self.launch, self.points, self.round = run, launch, points, round_
        self.budget = {point: run.races[point].wanted(launch.index) for point in points}
        self.visit_s: float | None = None
        self.stay_checked = False
        self.closed = False

    def observe(self, row: Row) -> None:
        """The start this visit's rows record: its start, staging and warm-up seconds (the teardown is not known
        yet, so coming back is if anything underestimated)."""
        if self.visit_s is None and row.get("cluster_start_s") is not None:
            parts = (row.get("cluster_start_s"), row.get("staging_s"), row.get("warmup_s"))
            self.visit_s = sum(part or 0.0 for part in parts)

    def next(self) -> Todo | None:
        if self.closed:
            return None
        index = self.launch.index
        for point in self.points:
            state = self.run.races[point]
            while self.budget[point] > 0:
                trial = state.taken[index]
                key = self.run._key(index, point, trial)
                if key not in self.run.recorded.done_s:
                    return Todo(self.launch, point, trial, key)
                state.record(index, self.run.recorded.done_s[key])  # ok in the store already (after a gap)
                self.budget[point] -= 1
                self.run.skipped += 1
        if not self.stay_checked and self.visit_s is not None:
            self.stay_checked = True
            if stays(self.visit_s, sum(self.run.races[point].rest_s(index) for point in self.points)):
                for point in self.points:
                    state = self.run.races[point]
                    self.budget[point] = 0 if state.exhausted(index) else state.policy.max_trials - state.taken[index]
                return self.next()
        return None

    def record(self, item: Todo, ok_time_s: float | None) -> SearchColumns:
        state = self.run.races[item.point]
        state.record(self.launch.index, ok_time_s)
        self.budget[item.point] -= 1
        stop = MAX_TRIALS_REACHED if state.exhausted(self.launch.index) else None
        return SearchColumns(stop_reason=stop, race_round=self.round)

    def rest(self) -> list[Todo]:
        """The launch could not start: the next trial of each point fails, the configuration takes no more there,
        and this visit ends."""
        self.closed = True
        items = []
        for point in self.points:
            if self.budget[point] > 0:
                state = self.run.races[point]
                trial = state.taken[self.launch.index]
                items.append(Todo(self.launch, point, trial, self.run._key(self.launch.index, point, trial)))
                state.taken[self.launch.index] = state.policy.max_trials
                self.budget[point] = 0
        return items

    def columns(self) -> SearchColumns:
        return SearchColumns(race_round=self.round)

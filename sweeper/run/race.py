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

from collections.abc import Callable, Iterator, Mapping

from sweeper.config.grid import RACE_MIN_TRIALS
from sweeper.names import BASELINE_ENGINE, PRUNED
from sweeper.planning.measurements import Todo, measurement_key
from sweeper.planning.plan import Launch, Plan, Point
from sweeper.run.rows import RunRecord, measurement_row
from sweeper.run.trials import LaunchQueue, TrialQueue, trial_policy
from sweeper.search.race import LEFT, MAX_TRIALS_REACHED, SETTLED, RacePolicy, RaceState, stays
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


class RaceRun:
    """One race sweep: measures through ``run_launch``, hands each row to ``emit`` as it is written."""

    def __init__(
        self, plan: Plan, run_launch: RunLaunch, done_s: Mapping[str, float], emit: Callable[[Row], None]
    ) -> None:
        self.plan, self.run_launch, self.done_s, self.emit = plan, run_launch, done_s, emit
        self.policy = race_policy(plan)
        self.launches = {launch.index: launch for launch in plan.launches}
        self.races: dict[Point, RaceState[int]] = {}
        self.skipped = 0
        for launch in plan.launches:
            if launch.engine == BASELINE_ENGINE:
                continue
            for point in plan.points[launch.index]:
                state = self.races.setdefault(point, RaceState.start((), self.policy))
                state.times_s[launch.index], state.taken[launch.index] = [], 0
                self._resume(state, launch.index, point)

    def _key(self, index: int, point: Point, trial: int) -> str:
        return measurement_key(self.plan.grid, self.plan, self.launches[index], point, trial)

    def _resume(self, state: RaceState[int], index: int, point: Point) -> None:
        """Count the ok trials the store already holds (in trial order, up to the first missing one)."""
        while (key := self._key(index, point, state.taken[index])) in self.done_s:
            state.record(index, self.done_s[key])
            self.skipped += 1

    def run(self) -> int:
        """Measure the baseline, then race round after round; the number of rounds."""
        for launch in self.plan.launches:
            if launch.engine == BASELINE_ENGINE:
                trials = trial_policy(self.plan.grid.workload)
                queue = TrialQueue(self.plan, launch, self.plan.points[launch.index], self.done_s, trials)
                for row in self.run_launch(launch, queue):
                    self.emit(row)
                self.skipped += queue.skipped
        for state in self.races.values():
            if any(state.taken.values()):
                state.decide()  # a resumed race decides on what it holds first
        rounds = 0
        while wants := self._wanted():
            rounds += 1
            for index, points in wants.items():
                visit = RaceQueue(self, self.launches[index], points, rounds)
                for row in self.run_launch(self.launches[index], visit):
                    visit.observe(row)
                    self.emit(row)
            for point in {point for points in wants.values() for point in points}:
                self.races[point].decide()
        return rounds

    def _wanted(self) -> dict[int, list[Point]]:
        """The points each launch has trials to take at in the next round, launches in plan order."""
        wants: dict[int, list[Point]] = {}
        for point, state in self.races.items():
            for index in state.alive:
                if state.wanted(index) > 0:
                    wants.setdefault(index, []).append(point)
        return dict(sorted(wants.items()))

    def decision_rows(self, run: RunRecord, recorded: set[str], data: Mapping[float, Data]) -> list[Row]:
        """A ``pruned`` row for each configuration and point that stopped before its most trials, saying why."""
        rows = []
        for point, state in self.races.items():
            leader = self.launches[state.leader].label if state.leader is not None else "-"
            for index in state.times_s:
                reason = state.stop_reason(index)
                if reason not in (LEFT, SETTLED) or state.exhausted(index):
                    continue
                trial = state.taken[index]
                key = self._key(index, point, trial)
                if key in recorded:
                    continue
                decided = state.left_at.get(index, state.rounds)
                why = (
                    f"left the race at decision {decided}: confidently more than {self.policy.delta:.0%} slower "
                    f"than {leader}"
                    if reason == LEFT
                    else f"the race settled at decision {decided}: {leader} is within {self.policy.delta:.0%} of "
                    "every configuration still in it"
                )
                todo = Todo(self.launches[index], point, trial, key)
                search = SearchColumns(stop_reason=reason, race_round=decided)
                outcome = run.outcome(PRUNED, why)
                rows.append(measurement_row(self.plan, todo, run, data[point.fraction], outcome=outcome, search=search))
        return rows

    def lines(self) -> list[str]:
        """What each race decided, for the end of ``sweeper run``."""
        lines = []
        for point, state in self.races.items():
            alive = [self.launches[index].label for index in state.alive]
            ended = "settled" if state.settled else "not settled at its most trials"
            text = f"epochs {point.epochs}" + (f", fraction {point.fraction:g}" if point.fraction != 1 else "")
            lines.append(
                f"{text}: {ended} after {state.rounds} decision(s), {len(state.left_at)} left; "
                f"within {self.policy.delta:.0%} of each other: {', '.join(alive)}"
            )
        return lines


class RaceQueue:
    """One visit of a launch: its trials of the round at each point, then, where staying is cheaper than coming
    back, every trial its configurations may still need."""

    def __init__(self, run: RaceRun, launch: Launch, points: list[Point], round_: int) -> None:
        self.run, self.launch, self.points, self.round = run, launch, points, round_
        self.budget = {point: run.races[point].wanted(launch.index) for point in points}
        self.visit_s: float | None = None
        self.stay_checked = False

    def observe(self, row: Row) -> None:
        """The start this visit's rows record: its start, staging and warm-up seconds (the teardown is not known
        yet, so coming back is if anything underestimated)."""
        if self.visit_s is None and row.get("cluster_start_s") is not None:
            parts = (row.get("cluster_start_s"), row.get("staging_s"), row.get("warmup_s"))
            self.visit_s = sum(part or 0.0 for part in parts)

    def next(self) -> Todo | None:
        index = self.launch.index
        for point in self.points:
            if self.budget[point] > 0:
                trial = self.run.races[point].taken[index]
                return Todo(self.launch, point, trial, self.run._key(index, point, trial))
        if not self.stay_checked and self.visit_s is not None:
            self.stay_checked = True
            if stays(self.visit_s, self._rest_s()):
                for point in self.points:
                    state = self.run.races[point]
                    self.budget[point] = 0 if state.exhausted(index) else state.policy.max_trials - state.taken[index]
                return self.next()
        return None

    def _rest_s(self) -> float:
        """What measuring every trial this launch may still need would take, at each point's median so far."""
        total = 0.0
        for point in self.points:
            state = self.run.races[point]
            times = sorted(state.times_s[self.launch.index])
            if times:
                total += (state.policy.max_trials - state.taken[self.launch.index]) * times[len(times) // 2]
        return total

    def record(self, item: Todo, ok_time_s: float | None) -> SearchColumns:
        state = self.run.races[item.point]
        state.record(self.launch.index, ok_time_s)
        self.budget[item.point] -= 1
        stop = MAX_TRIALS_REACHED if state.exhausted(self.launch.index) else None
        return SearchColumns(stop_reason=stop, race_round=self.round)

    def rest(self) -> list[Todo]:
        """The launch could not start: the next trial of each point fails, and the configuration takes no more."""
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

"""``search: {strategy: race}``: racing the configurations at every workload point, on real launches.

Each workload point (epochs, fraction, mode, model) is a race of every cluster launch that has it
(:mod:`sweeper.search.race` decides). The run goes in rounds: each launch with a configuration
still wanting trials is started once, takes its trials of the round at every such point, and,
when coming back would cost more than measuring everything it may still need
(:func:`sweeper.search.race.stays`, from a warm node's start and warm-up, :meth:`RaceRun.warm_visit_s`), takes
that at once. After a round every race decides. A round visits its launches in a random order drawn from the
grid's seed and the round, and a visit takes its points in a random order of the round's too
(:mod:`sweeper.search.interleaving`). The
single-thread baseline is a reference, not a candidate: it is measured first, with the grid's trials.
A configuration that stopped before its most trials (it left the race, or the race settled) gets one
``pruned`` row saying so.

Resuming (a run stopped by Ctrl-C or killed at any point): the run replays the race from the start, round by round,
each round in the order the stopped run drew (the same seed and round draw the same order), every trial the store
holds ``ok`` taken from it instead of measured (no launch starts for a visit the store holds
whole), so each decision sees the trials it saw the first time and decides the same. Whether a launch stayed for
all its trials (it compared a start's seconds, not kept, with the rest) is read from the round its next trial was
taken in (the row's ``race_round``); where the store lacks that trial, and for ``auto``'s choice after the first
round (from the same seconds), the run first replays the store without launching anything
(:func:`_resume_choices`) and keeps the choices under which every stored trial and recorded decision is explained
(a configuration stopped by a decision has no trials after it). Once a trial the store lacks comes, the run
measures on, deciding as a run that was never stopped; a visit it could not start a launch for (the store held
all its trials) stays only where the store shows it did: its launch is down, and staying would cost the start that
coming back costs.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from sweeper.config.grid import RACE_MIN_TRIALS
from sweeper.names import BASELINE_ENGINE, FAILED, PRUNED
from sweeper.planning.measurements import Todo, measurement_key
from sweeper.planning.plan import Launch, Plan, Point
from sweeper.run.rows import RunRecord, measurement_row
from sweeper.run.trials import (
    BASELINE_ROUND,
    LaunchQueue,
    TrialQueue,
    launch_order,
    point_order,
    trial_policy,
)
from sweeper.search.accounting import NOT_STARTED, warm_start_s
from sweeper.search.race import LEFT, MAX_TRIALS_REACHED, RESTING, SETTLED, RacePolicy, RaceState, stays
from sweeper.search.race_choice import Choice, choose
from sweeper.store.row import Row, SearchColumns, VisitColumns
from sweeper.workload.data import Data

RunLaunch = Callable[[Launch, LaunchQueue], Iterator[Row]]
MAX_REPLAYS = 64  # histories a resumed race tries against the store (each a replay without launches, milliseconds)


def race_policy(plan: Plan) -> RacePolicy:
    """The grid's race: ``search.delta`` and ``confidence``; trials from 2 to the grid's most. The first round is the
    race's own, the least that gives a spread: ``trials.min`` is adaptive trials' (a first round of 3 cost a third
    more on seed 001's tables for no decision it changed, README)."""
    grid = plan.grid
    most = grid.workload.trials
    return RacePolicy(grid.search.delta, grid.search.confidence, min(RACE_MIN_TRIALS, most), most)


@dataclass(frozen=True)
class Recorded:
    """What the store holds of a sweep before this run: ok times, the race decisions (``pruned`` rows' stop
    reasons and decisions) and the round each ok trial was taken in, by measurement key."""

    done_s: Mapping[str, float | None]
    decided: Mapping[str, tuple[str, int]]
    rounds: Mapping[str, int]  # the round each stored ok trial was taken in (its row's race_round)


class Stored:
    """The store as a race reads it: its trials' keys (computed once), which of them are ok, the last ok trial of
    each configuration and point, and the recorded decisions that are this race's."""

    def __init__(self, plan: Plan, policy: RacePolicy, recorded: Recorded) -> None:
        self.plan, self.done_s = plan, recorded.done_s
        self.launches = {launch.index: launch for launch in plan.launches}
        self._keys: dict[tuple[int, Point, int], str] = {}
        self.trials: set[str] = set()  # ok trials of the race's configurations
        self.last: dict[tuple[int, Point], int] = {}
        decisions = []
        for launch in plan.launches:
            if launch.engine == BASELINE_ENGINE:
                continue
            for point in plan.points[launch.index]:
                for trial in range(policy.max_trials + 1):  # a decision stands at a trial not taken, up to the most
                    key = self.key(launch.index, point, trial)
                    decisions.append(key)
                    if key in self.done_s and trial < policy.max_trials:
                        self.trials.add(key)
                        self.last[(launch.index, point)] = trial
        self.decisions = set(recorded.decided).intersection(decisions)

    def key(self, index: int, point: Point, trial: int) -> str:
        found = self._keys.get((index, point, trial))
        if found is None:
            found = measurement_key(self.plan.grid, self.plan, self.launches[index], point, trial)
            self._keys[(index, point, trial)] = found
        return found

    def gap(self, index: int, point: Point, trial: int) -> bool:
        """A trial the store lacks while it holds a later one of the same configuration and point (it failed)."""
        return self.last.get((index, point), -1) > trial


class _Frontier(Exception):
    """A replay reached the first trial the store does not hold."""


class _Contradiction(Exception):
    """A replay stopped a configuration whose next trial the store holds."""


class RaceRun:
    """One race sweep: measures through ``run_launch``, hands each row to ``emit`` as it is written, and writes each
    round's decisions (``pruned`` rows) through ``decisions`` as they are made.

    ``choices``: what to take at each point a replay of the store cannot decide from its times (see the module;
    None: found by :func:`_resume_choices`). ``dry``: a replay of the store only (:meth:`replayed`)."""

    def __init__(
        self,
        plan: Plan,
        run_launch: RunLaunch,
        recorded: Recorded,
        emit: Callable[[Row], None],
        decisions: Callable[[list[Row]], None],
        run: RunRecord,
        data: Mapping[float, Data],
        *,
        choices: Sequence[bool] | None = None,
        stored: Stored | None = None,
        dry: bool = False,
    ) -> None:
        self.plan, self.run_launch, self.recorded, self.emit = plan, run_launch, recorded, emit
        self.write_decisions, self.run_record, self.data = decisions, run, data
        self.policy = race_policy(plan)
        self.stored = stored or Stored(plan, self.policy, recorded)
        self.launches = {launch.index: launch for launch in plan.launches}
        self.races: dict[Point, RaceState[int]] = {}
        for launch in plan.launches:
            if launch.engine != BASELINE_ENGINE:
                for point in plan.points[launch.index]:
                    state = self.races.setdefault(point, RaceState.start((), self.policy))
                    state.times_s[launch.index], state.taken[launch.index] = [], 0
        self.written: set[str] = set(recorded.decided)
        self.stopped: set[str] = set()  # the keys of the decisions this run reached, written or not
        self.consumed: set[str] = set()  # the stored trials this run took from the store
        self.skipped = 0
        self.latest_starts: dict[int, tuple[float, float]] = {}  # each launch's latest start and warm-up seconds
        self.choice: Choice | None = None  # auto's, after the first round
        self.dry, self.live = dry, False  # live: a trial the store lacks came (the replay of the store is over)
        self.wants: dict[int, list[Point]] = {}  # this round's
        self.chosen: list[bool] = []
        self.given = tuple(choices) if choices is not None else _resume_choices(self)

    def _key(self, index: int, point: Point, trial: int) -> str:
        return self.stored.key(index, point, trial)

    def run(self) -> int:
        """Measure the baseline, then race round after round, writing each round's decisions; the rounds."""
        for launch in self.plan.launches:
            if launch.engine == BASELINE_ENGINE:
                trials = trial_policy(self.plan.grid.workload)
                points = self.plan.points[launch.index]
                visit = VisitColumns(visit_round=BASELINE_ROUND, visit_position=1)
                queue = TrialQueue(self.plan, launch, points, self.recorded.done_s, trials, visit=visit)
                for row in self.run_launch(launch, queue):
                    self.emit(row)
                self.skipped += queue.skipped
        return self.race()

    def race(self) -> int:
        """The race's rounds (a resumed run's replayed ones too, measured or not); how many."""
        rounds = 0
        while wants := self._wanted(rounds + 1):
            rounds += 1
            self.wants = wants
            for position, (index, points) in enumerate(wants.items(), 1):
                visit = RaceQueue(self, self.launches[index], points, rounds, position)
                for row in self.run_launch(self.launches[index], visit):
                    visit.observe(row)
                    self.emit(row)
            decided = {point for points in wants.values() for point in points}
            for point in decided:
                self.races[point].decide()
            if self.dry:
                self._check_stops(decided)
            self.write_decisions(self.decision_rows())
            if self.plan.grid.search.auto_reason and self.choice is None and any(s.rounds for s in self.races.values()):
                self._choose()  # after the first decision (the first round takes the scouts)
        return rounds

    def replayed(self) -> tuple[int, tuple[bool, ...]]:
        """A dry run: replay the store as far as it goes; the stored trials and recorded decisions this history
        leaves unexplained (0: it explains the store), and the choices it took."""
        try:
            self.race()
        except _Frontier:
            pass
        except _Contradiction:
            return len(self.stored.trials) + len(self.stored.decisions) + 1, tuple(self.chosen)
        unexplained = len(self.stored.trials - self.consumed) + len(self.stored.decisions - self.stopped)
        return unexplained, tuple(self.chosen)

    def _check_stops(self, points: set[Point]) -> None:
        """A replay that stops a configuration whose next trial the store holds is not the store's history."""
        for point in points:
            state = self.races[point]
            for index in state.times_s:
                if state.finished(index) and self._key(index, point, state.taken[index]) in self.stored.trials:
                    raise _Contradiction

    def replayed_choice(self, shown: bool) -> bool:
        """The next choice a replay of the store cannot make from its times: the given one, else what the store
        shows (``shown``)."""
        value = self.given[len(self.chosen)] if len(self.chosen) < len(self.given) else shown
        self.chosen.append(value)
        return value

    def stays_for_all(self, visit: RaceQueue) -> bool:
        """Whether ``visit``, its trials of the round taken, takes every trial its configurations may still need."""
        index = visit.launch.index
        if all(self.races[point].exhausted(index) for point in visit.points):
            return False
        if visit.started:
            return stays(self.warm_visit_s()[index], sum(self.races[point].rest_s(index) for point in visit.points))
        ahead = next(point for point in visit.points if not self.races[point].exhausted(index))
        key = self._key(index, ahead, self.races[ahead].taken[index])
        if key in self.recorded.done_s:  # the store took the next trial: in this round's visit if the launch stayed
            return self.recorded.rounds.get(key) == visit.round
        return False if self.live else self.replayed_choice(False)  # stayed and stopped before its next trial, or not

    def warm_visit_s(self) -> dict[int, float]:
        """What coming back to each launch this run started costs: a warm node's start and warm-up (its latest start,
        at most the median of its engine's other launches' latest: :func:`sweeper.search.accounting.warm_start_s`;
        the first launch on a node pays what later ones find there, such as YARN's localized jars and environment).
        Staging, once a sweep, is left out; the teardown is not known yet, so coming back is if anything
        underestimated."""
        engine = {index: launch.engine for index, launch in self.launches.items()}
        visits = {}
        for index, (start_s, warmup_s) in self.latest_starts.items():
            others_s = [
                s for other, (s, _) in self.latest_starts.items() if other != index and engine[other] == engine[index]
            ]
            visits[index] = warm_start_s(start_s, others_s) + warmup_s
        return visits

    def _choose(self) -> None:
        """``auto``: race on, or measure every remaining trial now, whichever the first round expects cheaper (a
        first round replayed from the store: the choice the store shows)."""
        if not self.live and not all(state.done for state in self.races.values()):
            self.choice = Choice.resumed(not self.replayed_choice(False))
        else:
            warm = self.warm_visit_s()
            fallback = float(np.median(list(warm.values()))) if warm else 0.0
            visit_s = {index: warm.get(index, fallback) for index in self.launches}
            nodes = {index: launch.nodes for index, launch in self.launches.items()}
            self.choice = choose(self.races, visit_s, nodes)
        if not self.choice.race:
            for state in self.races.values():
                state.measure_all()

    def _wanted(self, round_: int) -> dict[int, list[Point]]:
        """The points each launch has trials to take at in round ``round_``, the launches in the round's random order
        (:mod:`sweeper.search.interleaving`; a replay draws the same)."""
        wants: dict[int, list[Point]] = {}
        for point, state in self.races.items():
            for index in state.alive:
                if state.wanted(index) > 0:
                    wants.setdefault(index, []).append(point)
        return {index: wants[index] for index in launch_order(self.plan, wants, round_)}

    def decision_rows(self) -> list[Row]:
        """A ``pruned`` row for each configuration and point that stopped before its most trials since the last
        call (it left the race, the race settled, or it ended unsettled with this one resting), saying why; none
        twice, none the store holds (nor where it holds an ok trial)."""
        rows = []
        for point, state in self.races.items():
            leader = self._leader(state)
            for index in state.times_s:
                reason = state.stop_reason(index)
                if reason not in (LEFT, SETTLED, RESTING) or state.exhausted(index):
                    continue
                trial = state.taken[index]
                key = self._key(index, point, trial)
                self.stopped.add(key)
                if key in self.written or key in self.recorded.done_s:
                    continue
                self.written.add(key)
                if not self.dry:
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


def _resume_choices(race: RaceRun) -> tuple[bool, ...]:
    """The choices under which a replay of the store explains every trial and decision it holds (see the module):
    the store's own first (each point where it shows them), then histories with one of them flipped, fewest flips
    first; where none explains the store (a trial failed or was lost in the middle), the one that explains most."""
    if not race.stored.trials:
        return ()
    candidates: deque[tuple[bool, ...]] = deque([()])
    best: tuple[int, tuple[bool, ...]] | None = None
    for _ in range(MAX_REPLAYS):
        if not candidates:
            break
        given = candidates.popleft()
        replay = RaceRun(
            race.plan, _dry_launch, race.recorded, _ignore, _ignore, race.run_record, race.data,
            choices=given, stored=race.stored, dry=True,
        )  # fmt: skip
        unexplained, chosen = replay.replayed()
        if unexplained == 0:
            return chosen
        if best is None or unexplained < best[0]:
            best = (unexplained, chosen)
        candidates.extend((*chosen[:flip], not chosen[flip]) for flip in range(len(given), len(chosen)))
    return best[1] if best is not None else ()


def _dry_launch(launch: Launch, queue: LaunchQueue) -> Iterator[Row]:
    """A replay's launch: it takes nothing, and ends the replay where its queue wants a trial the store lacks."""
    if queue.next() is not None:
        raise _Frontier
    yield from ()


def _ignore(_: object) -> None:
    return None


class RaceQueue:
    """One visit of a launch: its trials of the round at each point (the points in the round's random order), then,
    where staying is cheaper than coming back, every trial its configurations may still need. Trials the store holds
    ok are taken from it."""

    def __init__(self, run: RaceRun, launch: Launch, points: list[Point], round_: int, position: int) -> None:
        self.run, self.launch, self.round = run, launch, round_
        self.points = point_order(run.plan, launch.index, points, round_)
        self.visit = VisitColumns(visit_round=round_, visit_position=position)
        self.budget = {point: run.races[point].wanted(launch.index) for point in points}
        self.started = False  # the visit's launch started (its rows record the start)
        self.measured = False  # the visit asked for a trial the store lacks (its launch started, or tried to)
        self.stay_checked = False
        self.closed = False

    def observe(self, row: Row) -> None:
        """The start this visit's first row records (a launch that did not start records none): the run's latest
        start of the launch (:meth:`RaceRun.warm_visit_s`)."""
        start_s = row.get("cluster_start_s")
        failed_start = row.get("status") == FAILED and str(row.get("error") or "").startswith(NOT_STARTED)
        if self.started or start_s is None or failed_start:
            return
        self.started = True
        self.run.latest_starts[self.launch.index] = (float(start_s), float(row.get("warmup_s") or 0.0))

    def next(self) -> Todo | None:
        if self.closed:
            return None
        index, run = self.launch.index, self.run
        for point in self.points:
            state = run.races[point]
            while self.budget[point] > 0:
                trial = state.taken[index]
                key = run._key(index, point, trial)
                stored = key in run.recorded.done_s
                if not stored and not (run.dry and run.stored.gap(index, point, trial)):
                    self.measured = run.live = True
                    return Todo(self.launch, point, trial, key)
                # ok in the store already (disturbed: no time; a replay: a gap is a trial that failed)
                state.record(index, run.recorded.done_s.get(key))
                self.budget[point] -= 1
                if stored:
                    run.consumed.add(key)
                    run.skipped += 1
        if not self.stay_checked and (self.started or not self.measured):
            self.stay_checked = True
            if run.stays_for_all(self):
                for point in self.points:
                    state = run.races[point]
                    self.budget[point] = 0 if state.exhausted(index) else state.policy.max_trials - state.taken[index]
                return self.next()
        return None

    def record(self, item: Todo, ok_time_s: float | None, disturbed: bool = False) -> SearchColumns:
        """A disturbed trial counts without its time: the race's next round measures the configuration again."""
        state = self.run.races[item.point]
        state.record(self.launch.index, None if disturbed else ok_time_s)
        self.budget[item.point] -= 1
        stop = MAX_TRIALS_REACHED if state.exhausted(self.launch.index) else None
        return SearchColumns(stop_reason=stop, race_round=self.round, **self.visit)

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
        return SearchColumns(race_round=self.round, **self.visit)

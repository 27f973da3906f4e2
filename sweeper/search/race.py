"""Racing with an indifference zone: measure configurations for the decision, not for each median.

One race is the configurations of both engines at one workload point (epochs, model, fraction).
All start with one trial, a *scout* (no decision): one whose scout took at least :data:`FAR_SLOWER` times the
fastest scout's time takes no more trials before the first decision (it is compared on that one trial, against the
spread of the others, where theirs give it :data:`FAR_SLOWER_DF` degrees of freedom; Spark 3-4x slower than Dask
leaves there), the others take ``min_trials``; after each round
of trials a configuration leaves the race
once it is *confidently more than delta slower* than the current leader, and the race is settled
once the leader is *confidently at most delta slower* than every configuration still in it (so at
most delta slower than the best; the others still in it were not shown more than delta slower than
the leader: a near-tie), or every one has ``max_trials``. A configuration the leader is already
confidently at most delta slower than, while others are not yet, *rests*: it takes no trials while
that holds, stays in the race and is compared again at every decision on the trials it has, and
takes trials again once the leader is no longer shown within delta of it (settling still needs
that bound against it, and it may still lead). A race that ends unsettled with
configurations resting gives them the stop reason ``within delta of the leader``.

Times are compared as logarithms, so delta is relative (0.05: 5 %) and run-to-run noise, which
scales with the time, is alike across configurations; the spread is pooled over the race (every
configuration's trials around its own mean, those that left the race included). Each comparison
with the leader is a one-sided bound at ``1 - (1 - confidence) / (m x looks)``: m the comparisons
of a round, looks the decisions a race may take (Bonferroni over both). Decisions come at
``min_trials`` and then at trial counts growing by half, rounded up to a multiple of ``min_trials``
(2, 4, 6, 10): few looks to pay for and few visits to a launch, with one at 6, where near-ties
within delta often settle.
This is the indifference-zone logic of Kim and Nelson's KN procedure (2001) with Maron and
Moore's elimination of the confidently worse (Hoeffding races, 1994). A race errs only when some
bound on the best configuration's difference to another fails at some look (a wrong exit, a wrong
settle and a wrong rest are all that event), so the union over the comparisons and looks bounds it
by 1 - confidence; the share of settled races that end on a configuration more than delta slower
than the best is checked by simulation in the tests.

Engines: a Spark-vs-Dask verdict stays possible because the best of each engine leaves only by
the same rule (confidently more than delta slower), which settles the engine question too.

Visits: a race's next decision needs every launch still in it started again. Once a launch is up
and has taken its trials of the round, :func:`stays` compares what coming back would cost (its
start, warm-up and teardown as measured) with measuring now every trial its configurations may
still need: where starts dominate, a launch measures everything at once and is never started
again, so racing never costs more than the grid; where measuring dominates, it comes back.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Generic, TypeVar

import numpy as np
from scipy import stats

from sweeper.config.grid import RACE_CONFIDENCE, RACE_DELTA, RACE_MIN_TRIALS
from sweeper.config.sections import search_problems
from sweeper.errors import UserError
from sweeper.search.spread import pooled_log_sd

K = TypeVar("K", bound=Hashable)
LEFT = "left the race"  # stop reasons of a configuration's last row at a point
SETTLED = "race settled"
RESTING = "within delta of the leader"  # rested when the race ended unsettled
MAX_TRIALS_REACHED = "max trials"
# A scout this many times the race's fastest scout: one trial until the first decision. On seed 001's stores
# (BENCHMARKS.md) 1.5 cut racing from 25.7-29.2 % to 18-22.5 % of the grid's node-seconds, choosing as well.
FAR_SLOWER = 1.5
# ... where the others' trials at that decision give the pooled spread this many degrees of freedom (with fewer, the
# t quantile of a comparison is so wide that none would leave on one trial: they take min_trials as before); a race
# too small for that (Spark vs Dask alone) takes no scouts, which would only cost a visit.
FAR_SLOWER_DF = 3


def scouts(configurations: int, policy: RacePolicy) -> bool:
    """Whether a race of ``configurations`` takes scouts: one far slower may wait while the others give the spread
    :data:`FAR_SLOWER_DF` degrees of freedom.

    >>> scouts(2, RacePolicy()), scouts(3, RacePolicy()), scouts(4, RacePolicy()), scouts(3, RacePolicy(min_trials=3))
    (False, False, True, True)
    """
    return (configurations - 1) * (policy.min_trials - 1) >= FAR_SLOWER_DF


@dataclass(frozen=True)
class RacePolicy:
    """``search: {strategy: race, delta, confidence}`` with the grid's trials (``min_trials`` to ``max_trials``)."""

    delta: float = RACE_DELTA
    confidence: float = RACE_CONFIDENCE
    min_trials: int = RACE_MIN_TRIALS
    max_trials: int = 10

    def __post_init__(self) -> None:
        problems = search_problems(delta=self.delta, confidence=self.confidence)
        if self.min_trials < 2:
            problems.append(f"the race's first round needs at least 2 trials (a spread), got {self.min_trials}")
        if self.max_trials < self.min_trials:
            problems.append(f"trials (max) must be at least {self.min_trials} for a race, got {self.max_trials}")
        if problems:
            raise UserError(problems)

    @property
    def delta_log(self) -> float:
        return math.log1p(self.delta)

    @property
    def schedule(self) -> tuple[int, ...]:
        """The trials a configuration has at each decision: ``min_trials``, then growing by half (rounded up to a
        multiple of ``min_trials``), ending at ``max_trials``.

        >>> RacePolicy(min_trials=2, max_trials=10).schedule, RacePolicy(min_trials=2, max_trials=30).schedule
        ((2, 4, 6, 10), (2, 4, 6, 10, 16, 24, 30))
        """
        step = self.min_trials
        sizes = [step]
        while sizes[-1] < self.max_trials:
            sizes.append(min(step * math.ceil(1.5 * sizes[-1] / step), self.max_trials))
        return tuple(sizes)


@dataclass(frozen=True)
class Round(Generic[K]):
    """One round's decision: the leader, who leaves, whether the race is settled (the leader within delta of all),
    and those the leader is already shown within delta of (they rest while others are not)."""

    leader: K
    leaving: tuple[K, ...]
    settled: bool
    cleared: tuple[K, ...] = ()


@lru_cache(maxsize=4096)
def _t_quantile(level: float, df: int) -> float:
    return float(stats.t.ppf(level, df))


def decision_quantile(policy: RacePolicy, racing: int, df: int) -> float:
    """The t quantile of one comparison with the leader, of ``racing`` configurations still in a race whose pooled
    spread has ``df`` degrees of freedom: every decision may err, so the error is shared out over the looks a race
    may take and the pairs of each (Bonferroni)."""
    return _t_quantile(1 - (1 - policy.confidence) / (len(policy.schedule) * (racing - 1)), df)


def race_round(
    times_s: Mapping[K, Sequence[float]], policy: RacePolicy, spread_from: Iterable[Sequence[float]] = ()
) -> Round[K]:
    """Decide one round from every trial so far of the configurations still in the race (at least one each);
    ``spread_from``: the trials of those that left, which count in the pooled spread only.

    >>> clear = race_round({"a": [10.0, 10.2, 9.9], "b": [30.0, 31.0, 29.5]}, RacePolicy())
    >>> clear.leader, clear.leaving, clear.settled
    ('a', ('b',), True)
    >>> close = race_round({"a": [10.0, 10.4], "b": [10.1, 10.6]}, RacePolicy())
    >>> close.leaving, close.settled
    ((), False)
    """
    keys = list(times_s)
    logs = {key: np.log(np.asarray(times_s[key], dtype=float)) for key in keys}
    means = {key: float(values.mean()) for key, values in logs.items()}
    leader = keys[min(range(len(keys)), key=lambda index: (means[keys[index]], index))]
    if len(keys) == 1:
        return Round(leader, (), True)
    spread = [*logs.values(), *(np.log(np.asarray(times, dtype=float)) for times in spread_from if len(times))]
    pooled_sd, df = pooled_log_sd(spread)
    if df < 1:
        return Round(leader, (), False)
    t = decision_quantile(policy, len(keys), df)
    leaving, cleared, within = [], [], True
    for key in keys:
        if key == leader:
            continue
        gap = means[key] - means[leader]
        margin = t * pooled_sd * math.sqrt(1 / logs[key].size + 1 / logs[leader].size)
        if gap - margin > policy.delta_log:
            leaving.append(key)  # confidently more than delta slower than the leader
        elif margin - gap >= policy.delta_log:
            within = False  # the leader may still be more than delta slower than this one
        else:
            cleared.append(key)  # the leader is confidently at most delta slower than this one
    return Round(leader, tuple(leaving), within, tuple(cleared))


def stays(visit_s: float, rest_s: float) -> bool:
    """Whether a started launch takes now every trial its configurations may still need (``rest_s`` of measuring)
    rather than come back for them later, which costs another start, warm-up and teardown (``visit_s``).

    >>> stays(40.0, 30.0), stays(40.0, 300.0)
    (True, False)
    """
    return rest_s <= visit_s


@dataclass
class RaceState(Generic[K]):
    """One race as it goes: each configuration's ok times and trials taken (failed ones too), who left and at which
    decision, who rests (see the module), whether it is settled."""

    times_s: dict[K, list[float]]
    taken: dict[K, int]
    policy: RacePolicy
    left_at: dict[K, int] = field(default_factory=dict)
    resting: set[K] = field(default_factory=set)
    rounds: int = 0
    settled: bool = False
    leader: K | None = None
    measuring_all: bool = False  # auto chose to stop deciding: every configuration still in takes its most trials
    scouted: bool = False  # every configuration still in has its scout's time (see the module)

    @classmethod
    def start(cls, configurations: Iterable[K], policy: RacePolicy) -> RaceState[K]:
        keys = list(configurations)
        return cls({key: [] for key in keys}, dict.fromkeys(keys, 0), policy)

    def record(self, key: K, time_s: float | None) -> None:
        """One more trial of ``key``: its time, or None when it did not end ``ok``."""
        self.taken[key] += 1
        if time_s is not None:
            self.times_s[key].append(time_s)

    @property
    def alive(self) -> list[K]:
        return [key for key in self.times_s if key not in self.left_at]

    def exhausted(self, key: K) -> bool:
        """``key`` took its most trials (failed ones count: a configuration that keeps failing ends too)."""
        return self.taken[key] >= self.policy.max_trials

    @property
    def done(self) -> bool:
        """Settled, or every configuration still in the race took its most trials or rests."""
        if self.measuring_all:
            return all(self.exhausted(key) for key in self.alive)
        return self.settled or all(self.exhausted(key) or key in self.resting for key in self.alive)

    def measure_all(self) -> None:
        """No more decisions: every configuration still in the race (resting ones included) takes its most trials;
        one that left stays out, a race already done stays as it ended."""
        if not self.done:
            self.measuring_all = True
            self.resting.clear()

    @property
    def level(self) -> int:
        """The ok trials every configuration still in the race has at its next decision (the schedule's next; 1:
        the scout)."""
        return 1 if self.scouting else self.policy.schedule[min(self.rounds, len(self.policy.schedule) - 1)]

    @property
    def scouting(self) -> bool:
        """The scouts are still to be taken (a race of :func:`scouts`' size)."""
        return not self.scouted and scouts(len(self.times_s), self.policy)

    def far_slower(self) -> set[K]:
        """Before the first decision, those still in whose scout took at least :data:`FAR_SLOWER` times the fastest
        scout's time: they take no more trials until then."""
        if self.rounds or not self.scouted:
            return set()  # a race that takes no scouts, or not yet: none waits
        scouts = {key: self.times_s[key][0] for key in self.alive if self.times_s[key]}
        fastest = min(scouts.values(), default=0.0)
        slower = {key for key, time_s in scouts.items() if time_s >= FAR_SLOWER * fastest}
        spread_df = (len(self.alive) - len(slower)) * (self.policy.min_trials - 1)
        return slower if spread_df >= FAR_SLOWER_DF else set()

    def wanted(self, key: K) -> int:
        """Trials ``key`` takes before the next decision: up to :attr:`level` ok trials (0: it left, rests, took its
        most trials, has enough, waits for the first decision far slower, or the race is done)."""
        if self.done or key in self.left_at or key in self.resting or self.exhausted(key):
            return 0
        if self.measuring_all:
            return self.policy.max_trials - self.taken[key]
        if key in self.far_slower():
            return 0
        return max(0, min(self.level - len(self.times_s[key]), self.policy.max_trials - self.taken[key]))

    def ready(self, key: K) -> bool:
        """``key`` has what the next decision needs: :attr:`level` ok trials, or its most trials taken, or it rests,
        or waits far slower."""
        enough = len(self.times_s[key]) >= self.level or self.exhausted(key)
        return enough or key in self.resting or key in self.far_slower()

    def decide(self) -> Round[K] | None:
        """After a round: who leaves, whether it is settled (None: no decision yet, see below).

        Decisions come only when every configuration still in the race is :meth:`ready` (one whose trial failed
        takes another first; the others wait), so a race decides once per count of the schedule, as its
        confidence assumes. A configuration without an ok time cannot lead or leave; while one can still take trials the
        race is not settled; one that took its most trials without any leaves.
        """
        if self.measuring_all or not all(self.ready(key) for key in self.alive):
            return None
        if self.scouting:
            self.scouted = True  # the scouts: no decision, they say who waits far slower
            return None
        for key in self.alive:
            if not self.times_s[key] and self.exhausted(key):
                self.left_at[key] = self.rounds + 1
        alive = self.alive
        timed = [key for key in alive if self.times_s[key]]
        if not timed:
            return None
        self.rounds += 1
        gone = [self.times_s[key] for key in self.left_at]
        decision = race_round({key: self.times_s[key] for key in timed}, self.policy, gone)
        for key in decision.leaving:
            self.left_at[key] = self.rounds
        self.settled = decision.settled and len(timed) == len(alive)
        self.resting = set(decision.cleared)
        self.leader = decision.leader
        return decision

    def finished(self, key: K) -> bool:
        """``key`` takes no more trials here: it left, took its most, or the race is done."""
        return key in self.left_at or self.exhausted(key) or self.done

    def rest_s(self, key: K) -> float:
        """What the trials ``key`` may still take would cost, at the median of its ok times so far (0 without)."""
        times = self.times_s[key]
        return (self.policy.max_trials - self.taken[key]) * float(np.median(times)) if times else 0.0

    def stop_reason(self, key: K) -> str | None:
        """Why ``key`` stopped measuring (None while it still races)."""
        if key in self.left_at:
            return LEFT
        if self.settled:
            return SETTLED
        if self.exhausted(key):
            return MAX_TRIALS_REACHED
        return RESTING if key in self.resting and self.done else None


def run_race(
    configurations: Sequence[K],
    policy: RacePolicy,
    measure: Callable[[K, int], Sequence[float]],
) -> RaceState[K]:
    """A race measured through ``measure(key, trials)`` (the next ``trials`` times of ``key``), round by round,
    each configuration taking what :meth:`RaceState.wanted` says (replay's and the tests' driver)."""
    state = RaceState.start(configurations, policy)
    while not state.done:
        for key in state.alive:
            for time_s in measure(key, state.wanted(key)):
                state.record(key, time_s)
        state.decide()
    return state

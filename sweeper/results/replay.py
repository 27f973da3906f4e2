"""Replay a search strategy offline on a sweep that was measured in full.

Each repeat resamples the recorded ok trials of every (configuration, rung) point with
replacement (a bootstrap resample as long as the trial policy's maximum, from a generator seeded
with ``--seed``), runs the strategy's decisions on it (adaptive stopping takes its trials one at a
time, in order), charges the cluster-seconds the rows record, and compares the choice with the
full grid's best: the best median of the recorded trials at the largest rung.

Configurations race within one model point (dataset, mode, batch, model parameters and the
other axis): the fastest of different models is only the smallest model. The single-thread
baseline is a reference, not a candidate, and is left out. A configuration is an engine x
executor shape x model point; one lacking ok trials at some rung is left out.

Cluster-seconds: a measured trial costs its recorded ``fit_wall_s`` times nodes; a launch costs
one start + warm-up + teardown (as its rows record) per rung at which halving measures any of
its configurations (halving must see a rung's results before the next rung, so a launch starts
again per rung), and once for the grid. The reference is the full grid as the rows record it.

Every repeat of every race is replayed at once, so a replay's time and memory grow with the rows and the
repeats, not with their product by the races or configurations: the resample is drawn in blocks of
configurations (in the order one configuration after another draws it, so a seed replays as it did), halving
runs on arrays of every (race, repeat)'s candidates (:mod:`sweeper.search.halving_batch`) and racing on arrays of
(repeats x configurations) (:mod:`sweeper.results.race_replay`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from itertools import pairwise
from typing import Any

import numpy as np
import pandas as pd

from sweeper.config.grid import (
    AUTO,
    FULL_GRID,
    RACE,
    RACE_CONFIDENCE,
    RACE_DELTA,
    RACE_MIN_TRIALS,
    REPLAY_REPEATS,
    REPLAY_SEED,
    REPLAY_STRATEGY,
    RUNG_AXES,
    RUNG_AXIS,
)
from sweeper.config.sections import REPLAY, flag_problems, search_problems
from sweeper.errors import UserError
from sweeper.names import BASELINE_ENGINE, CONFIG
from sweeper.results.race_replay import RaceItems, Visits, picks, race_repeats
from sweeper.results.statistics import FASTER, INCONCLUSIVE, config_label, ok_mask, pair_verdict
from sweeper.search.accounting import POINT, cluster_seconds, one_launch_s, rung_axis_of, warm_launch_s
from sweeper.search.adaptive import ADAPTIVE, TrialPolicy, stopping_trials
from sweeper.search.halving import HalvingPolicy, rung_values
from sweeper.search.halving_batch import BatchResult, RungTrials, every_best, halving_batch
from sweeper.search.race import RacePolicy

HALVING = HalvingPolicy()


@dataclass(frozen=True)
class ReplaySettings:
    """What to replay: the strategy, its trials and halving policies, how many repeats."""

    strategy: str = REPLAY_STRATEGY
    trials: TrialPolicy = ADAPTIVE
    halving: HalvingPolicy = HALVING
    repeats: int = REPLAY_REPEATS
    rung_axis: str = RUNG_AXIS
    seed: int = REPLAY_SEED
    delta: float = RACE_DELTA
    confidence: float = RACE_CONFIDENCE

    def __post_init__(self) -> None:
        problems = search_problems(
            strategy=self.strategy, rung_axis=self.rung_axis, delta=self.delta, confidence=self.confidence
        )
        problems += flag_problems(REPLAY, repeats=self.repeats, seed=self.seed)
        if problems:
            raise UserError(problems)

    def race(self, recorded_trials: int) -> RacePolicy:
        """The race's policy, as a run's (:func:`sweeper.run.race.race_policy`): its delta and confidence, from 2 trials
        to a fixed ``--trials N``, or with adaptive trials (the default) to the trials the sweep recorded a point
        (``recorded_trials``): what its full grid took, so the two compare."""
        trials = self.trials
        most = min(trials.max_trials, recorded_trials) if trials.adaptive else trials.max_trials
        return RacePolicy(self.delta, self.confidence, min(RACE_MIN_TRIALS, most), most)


@dataclass(frozen=True)
class Race:
    """The configurations of one model point: what they are and their recorded ok times per rung."""

    point: str
    labels: list[str]
    engines: list[str]
    launches: np.ndarray  # [configuration, rung]: the launch_index that measured it
    nodes: np.ndarray
    first: np.ndarray  # [configuration, rung]: where its recorded ok fit_wall_s begin in ``times``
    count: np.ndarray  # [configuration, rung]: how many there are
    times: np.ndarray  # every race's, in the rows' order by configuration and rung

    def recorded(self, configuration: int, rung: int) -> np.ndarray:
        """The recorded ok fit_wall_s of one configuration at one rung."""
        start = self.first[configuration, rung]
        return self.times[start : start + self.count[configuration, rung]]

    @cached_property
    def truth_s(self) -> np.ndarray:
        """The full grid's median per configuration at the largest rung."""
        return _medians_of(self.times, self.first[:, -1], self.count[:, -1])


def _medians_of(times: np.ndarray, first: np.ndarray, count: np.ndarray) -> np.ndarray:
    """The median of each ``times[first[i] : first[i] + count[i]]`` (count at least 1)."""
    medians = np.empty(first.size)
    for n in np.unique(count):
        at = np.flatnonzero(count == n)
        medians[at] = np.median(times[first[at, None] + np.arange(n)], axis=1)
    return medians


def races(df: pd.DataFrame, rung_axis: str) -> tuple[list[Race], tuple[Any, ...], int]:
    """The races of a sweep, its rung values, and how many configurations were left out (a rung without ok trials)."""
    ok = df[ok_mask(df) & df["engine"].ne(BASELINE_ENGINE).fillna(False).astype(bool) & df["fit_wall_s"].notna()]
    rungs = rung_values(ok[rung_axis].dropna().tolist())
    point_columns = [c for c in POINT if c != rung_axis]
    rows = _Rows.of(ok, point_columns, ["engine", "manager", *CONFIG, "nodes"], rung_axis, rungs)
    complete = np.all(rows.count > 0, axis=1) if rungs else np.zeros(len(rows.point), dtype=bool)
    bounds = np.searchsorted(rows.point, np.arange(rows.points + 1))  # configurations are numbered point by point
    found = []
    for start, end in pairwise(bounds):
        configs = start + np.flatnonzero(complete[start:end])
        if configs.size >= 2:
            found.append(rows.race(configs, point_columns))
    if not found:
        raise UserError(
            "the sweep has no two configurations measured at every value of the rung axis "
            f"({rung_axis}: {', '.join(str(v) for v in rungs) or 'none'}); replay needs a sweep measured in full"
        )
    return found, rungs, int(np.count_nonzero(~complete))


@dataclass(frozen=True)
class _Rows:
    """A sweep's ok rows by configuration (numbered in the order of (point, configuration)) and rung: each
    configuration's first row and point, per (configuration, rung) the rows' count, where their times begin, and
    the launch that measured most of them (the smallest index of equals); every time, in that order."""

    heads: pd.DataFrame
    point: np.ndarray
    count: np.ndarray
    first: np.ndarray
    launches: np.ndarray
    times: np.ndarray

    @property
    def points(self) -> int:
        return int(self.point.max()) + 1 if self.point.size else 0

    @classmethod
    def of(
        cls, ok: pd.DataFrame, point_columns: list[str], config_columns: list[str], axis: str, rungs: tuple
    ) -> _Rows:
        points = ok.groupby(point_columns, dropna=False, sort=True).ngroup().to_numpy()
        config = ok.groupby([*point_columns, *config_columns], dropna=False, sort=True).ngroup().to_numpy()
        configs, head = np.unique(config, return_index=True)
        rung = ok[axis].map({value: index for index, value in enumerate(rungs)}).to_numpy(dtype=float, na_value=np.nan)
        at = ~np.isnan(rung)
        cell = config[at] * len(rungs) + rung[at].astype(int)
        count = np.bincount(cell, minlength=configs.size * len(rungs))
        order = np.argsort(cell, kind="stable")
        first = np.cumsum(count) - count
        launch = ok["launch_index"].to_numpy(dtype=float, na_value=np.nan)[at]
        shape = (configs.size, len(rungs))
        return cls(
            ok.iloc[head],
            points[head],
            count.reshape(shape),
            first.reshape(shape),
            _most_frequent(cell, launch, count.size).reshape(shape),
            ok["fit_wall_s"].to_numpy(dtype=float)[at][order],
        )

    def race(self, configs: np.ndarray, point_columns: list[str]) -> Race:
        """The race of ``configs`` (one point's)."""
        heads = self.heads.iloc[configs]
        engines = [str(engine) for engine in heads["engine"]]
        shapes = zip(*(heads[column] for column in CONFIG), strict=True)
        labels = [f"{engine} {config_label(*shape)}" for engine, shape in zip(engines, shapes, strict=True)]
        nodes = np.array([1.0 if pd.isna(n) else float(n) for n in heads["nodes"]])
        first = heads.iloc[0]
        point = ", ".join(f"{c}={first[c]}" for c in point_columns if not pd.isna(first[c]))
        return Race(
            point,
            labels,
            engines,
            self.launches[configs],
            nodes,
            self.first[configs],
            self.count[configs],
            self.times,
        )


def _most_frequent(cell: np.ndarray, launch: np.ndarray, cells: int) -> np.ndarray:
    """Per cell, the launch_index most of its rows have (the smallest of equals; -1 for a cell without rows)."""
    known = ~np.isnan(launch)
    frame = pd.DataFrame({"cell": cell[known], "launch": launch[known].astype(np.int64)})
    sizes = frame.groupby(["cell", "launch"]).size().rename("rows").reset_index()
    sizes = sizes.sort_values(["cell", "rows", "launch"], ascending=[True, False, True], kind="stable")
    chosen = sizes.drop_duplicates("cell")
    most = np.full(cells, -1, dtype=np.int64)
    most[chosen["cell"].to_numpy()] = chosen["launch"].to_numpy()
    return most


MAX_DRAWS = 2 * 10**8  # resampled times of the largest point's repeats: a bound on a replay's time


def _check_draws(found: Sequence[Race], repeats: int, max_trials: int) -> None:
    """Refuse ``--repeats`` x ``--max-trials`` (checked together) when the largest point's draws pass MAX_DRAWS."""
    largest = max((race.count.size for race in found), default=0)
    draws = largest * repeats * max_trials
    if draws > MAX_DRAWS:
        raise UserError(
            f"replay: --repeats {repeats} x --max-trials {max_trials} over {largest} configurations and rungs is "
            f"{draws:.3g} resampled times ({draws * 8 / 2**30:.1f} GiB), more than {MAX_DRAWS:.0e}: "
            "lower --repeats or --max-trials"
        )


def _dense_launches(found: list[Race], overhead: pd.Series) -> tuple[list[Race], pd.Series]:
    """The races and per-launch overhead with launch indices renumbered 0..K-1, so that arrays indexed by launch
    are as long as the launches there are, not as the largest index a store holds (999999)."""
    indices = np.unique(np.concatenate([overhead.index.to_numpy(dtype=int), *(r.launches.ravel() for r in found)]))
    renumbered = [replace(r, launches=np.searchsorted(indices, r.launches)) for r in found]
    dense = pd.Series(overhead.to_numpy(dtype=float), index=np.searchsorted(indices, overhead.index.to_numpy(int)))
    return renumbered, dense


def recorded_trials(found: Sequence[Race]) -> int:
    """The ok trials the sweep recorded a point (the median over every configuration and rung)."""
    return int(np.median(np.concatenate([race.count.ravel() for race in found])))


@dataclass(frozen=True)
class StoreLimits:
    """What a sweep's rows can replay honestly, and so the defaults of ``sweeper replay``: its rung axis, the ok
    trials it holds per point (a resample longer than that only draws the same times again) and the (configuration,
    rung) cells of its largest race (how many repeats fit in :data:`MAX_DRAWS`)."""

    rung_axis: str
    trials_per_point: int
    largest_race_cells: int

    @classmethod
    def of(cls, df: pd.DataFrame, rung_axis: str | None = None) -> StoreLimits:
        """The limits of ``df``'s sweep, its races on ``rung_axis`` (None: :func:`_store_rung_axis`)."""
        axis = rung_axis or _store_rung_axis(df)
        found, _, _ = races(df, axis)
        return cls(axis, recorded_trials(found), max(race.count.size for race in found))

    def trials(self, fixed: int | None, least: int | None, most: int | None, target_rel_ci: float) -> TrialPolicy:
        """``--trials N`` (``fixed``), else adaptive from ``least`` to ``most``: by default at most the trials held
        per point, at least 3 (fewer when at most is fewer)."""
        if fixed is not None:
            return TrialPolicy.fixed(fixed)
        most = most if most is not None else max(self.trials_per_point, least or 1)
        least = least if least is not None else min(ADAPTIVE.min_trials, most)
        return TrialPolicy(least, most, target_rel_ci)

    def repeats(self, max_trials: int) -> int:
        """:data:`REPLAY_REPEATS`, or as many as keep the largest race's draws within :data:`MAX_DRAWS`."""
        return max(1, min(REPLAY_REPEATS, MAX_DRAWS // (self.largest_race_cells * max_trials)))

    def beyond(self, trials: TrialPolicy, flag: str) -> str | None:
        """A warning when ``trials`` take more than the trials held per point (``flag``: the option that asked)."""
        if trials.max_trials <= self.trials_per_point:
            return None
        return (
            f"{flag} {trials.max_trials}: more than the {self.trials_per_point} trials the store holds per point; "
            "the resample draws the same times again, so the replay looks surer than the store is"
        )


def _store_rung_axis(df: pd.DataFrame) -> str:
    """The rung axis of a sweep: as its rows recorded it where it has several values, else the first of epochs and
    fraction that has several (epochs when neither has)."""
    recorded = rung_axis_of(df)
    axes = [recorded, *(axis for axis in RUNG_AXES if axis != recorded)]
    return next((axis for axis in axes if df[axis].nunique() > 1), RUNG_AXIS)


@dataclass(frozen=True)
class Resampled:
    """Per (configuration of every race in turn, rung, repeat): the resample's trials taken (:class:`RungTrials`),
    their node-seconds and whether they stopped on a CI reached."""

    trials: RungTrials
    cost_s: np.ndarray
    ci_reached: np.ndarray


DRAWS_AT_ONCE = 1 << 22  # resampled times held at once while resampling (8 bytes each)


def resample(
    found: Sequence[Race], policy: TrialPolicy, repeats: int, rng: np.random.Generator, logs: bool
) -> Resampled:
    """Resample every (configuration, rung) ``repeats`` times and stop each as the trial policy says; ``logs``: with
    the log moments of the trials taken (halving's rank check). Draws in the order configuration by configuration,
    rung by rung, a repeat's trials after another's."""
    first = np.concatenate([race.first for race in found])
    count = np.concatenate([race.count for race in found])
    nodes = np.concatenate([race.nodes for race in found])
    times = found[0].times
    shape = (*first.shape, repeats)
    median_s, cost_s = np.zeros(shape), np.zeros(shape)
    log_mean, log_ssd = (np.zeros(shape) if logs else None for _ in range(2))
    taken, reached = np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=bool)
    block = max(1, DRAWS_AT_ONCE // (first.shape[1] * repeats * policy.max_trials))
    for start in range(0, first.shape[0], block):
        span = slice(start, start + block)
        picked = picks(rng, count[span, :, None, None], (*first[span].shape, repeats, policy.max_trials))
        draws = times[first[span, :, None, None] + picked].reshape(-1, policy.max_trials)
        n, stopped = stopping_trials(draws, policy)
        taken[span], reached[span] = n.reshape(-1, *shape[1:]), stopped.reshape(-1, *shape[1:])
        moments = _moments(draws, n, logs)
        cost_s[span] = moments[0].reshape(-1, *shape[1:]) * nodes[span, None, None]
        for whole, part in zip((median_s, log_mean, log_ssd), moments[1:], strict=False):
            if whole is not None:
                whole[span] = part.reshape(-1, *shape[1:])
    return Resampled(RungTrials(median_s, taken, log_mean, log_ssd), cost_s, reached)


def _moments(draws: np.ndarray, taken: np.ndarray, logs: bool) -> list[np.ndarray]:
    """Per row of ``draws``, of its first ``taken``: their sum (added in order) and median and, with ``logs``, the
    mean of their logarithms and their sum of squares around it."""
    moments = [np.zeros(taken.size) for _ in range(4 if logs else 2)]
    for n in np.unique(taken):
        rows = taken == n
        moments[0][rows] = np.cumsum(draws[rows, :n], axis=1)[:, -1]
        moments[1][rows] = np.median(draws[rows, :n], axis=1)
        if logs:
            values = np.log(draws[rows, :n])
            centre = values.mean(axis=1)
            moments[2][rows], moments[3][rows] = centre, ((values - centre[:, None]) ** 2).sum(axis=1)
    return moments


def replay(df: pd.DataFrame, settings: ReplaySettings) -> dict[str, Any]:
    """Replay ``settings.strategy`` on a fully measured sweep; the result has stable keys (see :data:`KEYS`).

    ``auto`` replays what a grid's ``auto`` chooses (:func:`sweeper.config.checks.auto_strategy`): a race where a
    point has 2 trials or more to decide on, else the grid, and after the race's first look racing on or
    measuring everything at once as :mod:`sweeper.search.race_choice` expects cheaper (``auto_all_at_once``: the
    share of repeats that chose the latter); the result names the strategy chosen."""
    auto = settings.strategy == AUTO
    if auto:
        settings = replace(settings, strategy=RACE if settings.trials.max_trials >= RACE_MIN_TRIALS else FULL_GRID)
    found, rungs, left_out = races(df, settings.rung_axis)
    _check_draws(found, settings.repeats, settings.trials.max_trials)
    rng = np.random.default_rng(settings.seed)
    scope = df[df["engine"].ne(BASELINE_ENGINE).fillna(False).astype(bool)]
    recorded, (found, overhead) = found, _dense_launches(found, one_launch_s(scope).sum(axis=1))
    shared = _Shared(settings, found, rungs, left_out, cluster_seconds(scope).total_s)
    if settings.strategy == RACE:
        _, warm = _dense_launches(recorded, warm_launch_s(scope))  # the same launches, numbered alike
        return _replay_race(shared, Visits(_per_launch(found, overhead), _per_launch(found, warm)), rng, auto)
    return _replay_halving(shared, overhead, rng)


@dataclass(frozen=True)
class _Shared:
    """What every strategy's replay reports: the settings, the races, the rungs, the configurations left out and the
    full grid's node-seconds; the full grid's engine verdict per race."""

    settings: ReplaySettings
    found: list[Race]
    rungs: tuple[Any, ...]
    left_out: int
    reference_s: float

    @cached_property
    def verdicts(self) -> list[str | None]:
        return [_significant_engine(race) for race in self.found]

    def summary(
        self, regrets: np.ndarray, wrong: np.ndarray, widened: np.ndarray, spent_s: np.ndarray
    ) -> dict[str, Any]:
        return _summary(self, regrets, [bool(w) for w in wrong], widened, spent_s)


def _replay_halving(shared: _Shared, overhead: pd.Series, rng: np.random.Generator) -> dict[str, Any]:
    """:func:`replay` of ``halving`` or ``grid``: every repeat of every race at once."""
    settings, found = shared.settings, shared.found
    halving = settings.strategy != FULL_GRID
    sampled = resample(found, settings.trials, settings.repeats, rng, logs=halving and len(shared.rungs) > 1)
    starts = np.cumsum([0, *(len(race.labels) for race in found)])
    engines = np.unique(np.concatenate([race.engines for race in found]), return_inverse=True)[1]
    if halving:
        outcome = halving_batch(sampled.trials, starts, engines, settings.halving)
    else:
        best = every_best(sampled.trials.median_s[:, -1, :], starts)
        measured = np.ones(sampled.cost_s.shape, dtype=bool)
        outcome = BatchResult(best, np.zeros(best.size, dtype=bool), measured)
    measured = outcome.measured
    launches = np.concatenate([race.launches for race in found])
    spent_s = np.where(measured, sampled.cost_s, 0.0).sum(axis=(0, 1))
    spent_s += _overhead_s(measured, launches, overhead, per_rung=halving)
    choices = outcome.best.reshape(len(found), settings.repeats) - starts[:-1, None]
    regrets, wrong = _judged(shared, choices)
    widened = np.any(outcome.widened.reshape(len(found), settings.repeats), axis=0)
    return shared.summary(regrets, wrong, widened, spent_s) | {
        "trials_mean": float(sampled.trials.count[measured].mean()),
        "ci_reached": float(sampled.ci_reached[measured].mean()) if settings.trials.adaptive else None,
        "race_settled": None,
        "auto_all_at_once": None,
    }


def _per_launch(found: Sequence[Race], overhead: pd.Series) -> np.ndarray:
    """``overhead`` as an array indexed by the (dense) launch numbers of ``found``."""
    per_launch = np.zeros(max(int(overhead.index.max()), *(int(r.launches.max()) for r in found)) + 1)
    per_launch[overhead.index.to_numpy(dtype=int)] = overhead.to_numpy(dtype=float)
    return per_launch


def _replay_race(shared: _Shared, visit_s: Visits, rng: np.random.Generator, auto: bool) -> dict[str, Any]:
    """:func:`replay` of ``race``: every (model point, rung value) raced, launches visited per look."""
    found = shared.found
    policy = shared.settings.race(recorded_trials(found))
    items = _race_items(found)
    outcome = race_repeats(items, visit_s, policy, shared.settings.repeats, rng, auto)
    regrets, wrong = _judged(shared, outcome.choices.T)
    no_widening = np.zeros(shared.settings.repeats, dtype=bool)
    return shared.summary(regrets, wrong, no_widening, outcome.spent_s) | {
        "trials_mean": outcome.trials_taken / (shared.settings.repeats * items.launch.size),
        "ci_reached": None,
        "race_settled": float(np.mean(outcome.settled)),
        "auto_all_at_once": float(outcome.all_at_once.mean()) if auto else None,
    }


def _race_items(found: Sequence[Race]) -> RaceItems:
    """Every (race, rung) of the replay as a race of its configurations, in the order (race, rung, configuration)."""
    per_rung = [race.count.shape[0] for race in found for _ in range(race.count.shape[1])]
    starts = np.cumsum([0, *per_rung])[:-1]
    last = np.cumsum([race.count.shape[1] for race in found]) - 1
    return RaceItems(
        starts,
        last,
        np.concatenate([race.launches.T.ravel() for race in found]),
        np.concatenate([np.tile(race.nodes, race.count.shape[1]) for race in found]),
        np.concatenate([race.first.T.ravel() for race in found]),
        np.concatenate([race.count.T.ravel() for race in found]),
        found[0].times,
    )


def _judged(shared: _Shared, choices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each race's repeats' choices (races x repeats, a configuration of the race): the regrets against the full
    grid's best, and whether the choice is of the slower engine (races with a verdict only)."""
    regrets, wrong = [], []
    for race, verdict, chosen in zip(shared.found, shared.verdicts, choices, strict=True):
        truth_s = race.truth_s
        regrets.append(truth_s[chosen] / truth_s.min() - 1)
        if verdict is not None:
            wrong.append(np.array(race.engines)[chosen] != verdict)
    return np.concatenate(regrets), np.concatenate(wrong) if wrong else np.zeros(0, dtype=bool)


def _overhead_s(measured: np.ndarray, launches: np.ndarray, overhead: pd.Series, per_rung: bool) -> np.ndarray:
    """Per repeat: a start + warm-up + teardown per launch and rung at which it measured anything (halving) or per
    launch (grid)."""
    per_launch = np.zeros(max(int(launches.max()), int(overhead.index.max())) + 1)
    per_launch[overhead.index.to_numpy(dtype=int)] = overhead.to_numpy(dtype=float)
    rungs = np.broadcast_to(np.arange(launches.shape[1]), launches.shape)
    visit = (rungs * per_launch.size + launches if per_rung else launches).ravel()
    visits, visit_of = np.unique(visit, return_inverse=True)
    order = np.argsort(visit_of, kind="stable")
    bounds = np.searchsorted(visit_of[order], np.arange(visits.size))
    used = np.logical_or.reduceat(measured.reshape(-1, measured.shape[2])[order], bounds, axis=0)
    return np.asarray(used.T.astype(float) @ per_launch[visits % per_launch.size])


def _significant_engine(race: Race) -> str | None:
    """The full grid's faster engine at the largest rung, when its best beats the other engines' best (Mann-Whitney)."""
    truth_s = race.truth_s
    best: dict[str, int] = {}
    for index in np.argsort(truth_s, kind="stable"):
        best.setdefault(race.engines[index], int(index))
    if len(best) < 2:
        return None
    (first, a), (second, b) = list(best.items())[:2]
    times_a, times_b = race.recorded(a, -1), race.recorded(b, -1)
    verdict, _ = pair_verdict(times_a, times_b, (first, second))
    return first if verdict == f"{first} {FASTER}" else None


KEYS = (
    "strategy", "trials", "eta", "rank_threshold", "repeats", "seed", "rung_axis", "rungs", "races",
    "configurations", "left_out", "full_grid_best", "full_grid_best_s", "within_5pct", "within_10pct",
    "regret_median", "regret_p95", "cluster_s_fraction", "cluster_s_fraction_p95", "full_grid_cluster_s",
    "strategy_cluster_s_median", "engine_verdict", "wrong_engine", "rank_check_widened", "trials_mean",
    "ci_reached", "delta", "confidence", "race_settled", "auto_all_at_once",
)  # fmt: skip


def _summary(
    shared: _Shared, regrets: np.ndarray, wrong: list[bool], widened: np.ndarray, spent_s: np.ndarray
) -> dict[str, Any]:
    """The replay's figures, with the stable keys of :data:`KEYS` (each strategy's own added by :func:`replay`)."""
    settings, found, reference_s = shared.settings, shared.found, shared.reference_s
    first = found[0]
    best = int(np.argmin(first.truth_s))
    fraction = spent_s / reference_s if reference_s > 0 else np.full_like(spent_s, np.nan)
    trials = settings.trials
    if settings.strategy == RACE:
        race = settings.race(recorded_trials(found))
        trials_text = f"raced {race.min_trials}..{race.max_trials} to within {race.delta:.0%} at {race.confidence:g}"
    elif trials.target_rel_ci is not None:
        trials_text = f"adaptive {trials.min_trials}..{trials.max_trials} to +-{trials.target_rel_ci:g}"
    else:
        trials_text = str(trials.max_trials)
    return {
        "strategy": settings.strategy,
        "trials": trials_text,
        "eta": settings.halving.eta,
        "rank_threshold": settings.halving.rank_threshold,
        "repeats": settings.repeats,
        "seed": settings.seed,
        "rung_axis": settings.rung_axis,
        "rungs": [_plain(value) for value in shared.rungs],
        "races": len(found),
        "configurations": sum(len(race.labels) for race in found),
        "left_out": shared.left_out,
        "full_grid_best": first.labels[best] + (f" ({first.point})" if len(found) > 1 else ""),
        "full_grid_best_s": float(first.truth_s[best]),
        "within_5pct": float(np.mean(regrets <= 0.05)),
        "within_10pct": float(np.mean(regrets <= 0.10)),
        "regret_median": float(np.median(regrets)),
        "regret_p95": float(np.quantile(regrets, 0.95)),
        "cluster_s_fraction": float(np.mean(fraction)),
        "cluster_s_fraction_p95": float(np.quantile(fraction, 0.95)),
        "full_grid_cluster_s": reference_s,
        "strategy_cluster_s_median": float(np.median(spent_s)),
        "engine_verdict": _verdicts_text(shared.verdicts),
        "wrong_engine": float(np.mean(wrong)) if wrong else None,
        "rank_check_widened": float(np.mean(widened)),
        "delta": settings.delta,
        "confidence": settings.confidence,
    }


def _verdicts_text(verdicts: list[str | None]) -> str:
    """The full grid's engine verdicts: one race's, or how many races had each.

    >>> _verdicts_text(["dask", None, "dask"])
    'dask faster (2 races), inconclusive (1 race)'
    """
    texts = [f"{v} {FASTER}" if v else INCONCLUSIVE for v in verdicts]
    if len(texts) == 1:
        return texts[0]
    counts = Counter(texts)
    return ", ".join(f"{text} ({n} race{'s' if n > 1 else ''})" for text, n in counts.most_common())


def _plain(value: Any) -> Any:
    """A rung value as a JSON number (numpy and pandas scalars as Python ones)."""
    return value.item() if hasattr(value, "item") else value

"""``sweeper recommend``: which engine and configuration to use, how sure that is, and how to right-size it.

Pure functions over the rows of one sweep (:func:`sweeper.store.parquet.load_sweep`); nothing reads
files or keeps state, and every random draw comes from a generator seeded with ``seed``.

An *arm* is an engine and configuration (``engine``, ``cores_per_executor``, ``executors``,
``executor_memory_gib``). Arms are compared within one workload (:func:`statistics.workload_keys`)
and one epochs value, over ``status == 'ok'`` rows only; the single-thread baseline (engine
``local``) is never a winner. A store of several workloads gets one answer per workload and
epochs value, each carrying its workload's fields.

The answer, per workload and epochs value:

- ``winner``: the arm with the lowest median of the objective (time: ``fit_wall_s``; cost: the
  price of one measurement, ``fit_wall_s / 3600 x nodes x cost_per_node_hour`` as in
  :func:`statistics.price`), ties to the fewer total cores; its median time with a 95 %
  percentile-bootstrap interval of the median. ``runner_up``: the second lowest.
- ``ratio``: runner-up median / winner median (so >= 1: how many times slower, or dearer, the
  runner-up is), with the bootstrap interval of :func:`statistics.ratio_of_medians`.
- ``verdict``: the winner is tested against every other arm with at least ``min_trials`` ok trials
  (Mann-Whitney U, two-sided), the p-values Holm-corrected over those pairs. ``faster`` (``cheaper``
  for the cost objective) when every corrected p is below ``alpha`` with the winner lower;
  ``inconclusive`` otherwise (an arm with too few trials to test also leaves it inconclusive);
  ``too few trials`` when the winner or the runner-up has fewer than ``min_trials``; ``one
  configuration`` when nothing else was measured.
- ``trials_needed`` (inconclusive only): trials per arm that would settle the hardest unsettled
  pair at the observed spread. A normal-approximation power calculation on log times: the
  difference ``d`` of the log medians, the pooled standard deviation ``s`` of the log values,
  ``n = 2 (z[1 - alpha/2m] + z[0.8])^2 s^2 / d^2`` (Bonferroni over the ``m`` pairs, so at least
  as many as Holm needs; 80 % power), divided by 3/pi, the efficiency of Mann-Whitney relative to
  the t-test for normal data; at least ``min_trials``. ``None`` when the medians are equal (no number
  of trials settles it) or an arm has fewer than two values.
- ``within_budget`` (with ``budget``): the fastest arm whose median cost per measurement is within it.

Spark vs Dask, per workload and epochs: each engine's best arm (as above) against the other's;
``ratio`` = spark / dask (of the objective) with its bootstrap interval; verdict ``spark faster``,
``dask faster`` (``cheaper`` for cost), ``inconclusive`` or ``too few trials`` (one Mann-Whitney test
at ``alpha`` per epochs value).

Accuracy: the winner against the most accurate arm (highest median ``accuracy``): one-sided
non-inferiority, the 5th percentile of the bootstrap distribution of the difference of mean
accuracies (winner - best) must lie above ``-accuracy_margin``. When every trial's accuracy is the
same on every arm (the same fits on every engine: ``replicas`` with the same seeds) accuracy
cannot differ and nothing is tested.

Memory per workload, engine and configuration, and slots left idle: :mod:`sweeper.results.right_sizing`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from sweeper.config.sections import RECOMMEND, flag_problems
from sweeper.config.work import EPOCHS, NO_WORK_AXIS_NAME, axis_point, axis_text
from sweeper.engines import descriptor, figure_order
from sweeper.errors import UserError
from sweeper.names import ACCURACY_MARGIN, BASELINE_ENGINE, CONFIG, COST, OK, TIME
from sweeper.results import statistics
from sweeper.results.groups import first_rows, group_ids, members
from sweeper.results.predict.forecast import work_axis_name
from sweeper.results.right_sizing import (
    ARM,
    LOW_UTILISATION,
    IdleSlots,
    MemoryAdvice,
    as_int,
    idle_slots,
    memory_advice,
    plain_value,
)
from sweeper.results.statistics import (
    ALPHA,
    CHEAPER,
    FASTER,
    INCONCLUSIVE,
    MEASURED_UNDER_LOAD,
    MIN_TRIALS,
    N_BOOTSTRAP,
    ONE_CONFIGURATION,
    SEED,
    TOO_FEW_TRIALS,
    ok_mask,
)
from sweeper.results.unmeasured import Unmeasured, unmeasured
from sweeper.search.race import LEFT, SETTLED

POWER = 0.8
MANN_WHITNEY_EFFICIENCY = 3 / math.pi


# -- results ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Arm:
    """One engine and configuration: its ok trials, median time (95 % CI) and median cost (NaN unpriced)."""

    engine: str
    cores_per_executor: int
    executors: int
    executor_memory_gib: float
    n: int
    median_s: float
    median_low_s: float
    median_high_s: float
    median_cost: float = math.nan

    @property
    def label(self) -> str:
        """The configuration's name in tables (:func:`statistics.config_label`) with its engine."""
        config = statistics.config_label(self.cores_per_executor, self.executors, self.executor_memory_gib)
        return f"{self.engine} {config}"


@dataclass(frozen=True)
class Pair:
    """The winner against one other arm: Mann-Whitney p, Holm-corrected p, and whether the winner is lower."""

    other: Arm
    p: float
    p_holm: float
    winner_lower: bool


DEFAULT_SCORE = "accuracy"


@dataclass(frozen=True)
class AccuracyCheck:
    """Non-inferiority of the winner's accuracy against the most accurate arm.

    ``status``: ``most accurate``, ``non-inferior``, ``not shown non-inferior``, ``cannot differ``
    (identical fits), ``not measured`` or ``too few trials``. ``difference`` = mean accuracy of the
    winner - that of ``best``; ``difference_low`` its one-sided 95 % lower bound.
    """

    status: str
    margin: float
    best: Arm | None = None
    difference: float = math.nan
    difference_low: float = math.nan


@dataclass(frozen=True)
class Answer:
    """The recommendation for one workload and epochs value (see the module docstring)."""

    workload: dict[str, Any]
    epochs: int
    objective: str
    winner: Arm
    runner_up: Arm | None
    ratio: float
    ratio_low: float
    ratio_high: float
    verdict: str
    pairs: tuple[Pair, ...]
    untested: tuple[Arm, ...]
    trials_needed: int | None
    accuracy: AccuracyCheck
    within_budget: Arm | None = None
    baseline_s: float | None = None  # the single-thread baseline's median time at this point, if measured
    near_tie: tuple[Arm, ...] = ()  # a settled race's configurations still in it (its leader within delta of each)
    near_tie_delta: float | None = None

    @property
    def baseline_wins(self) -> bool:
        """Whether one thread, no cluster, beat every configuration (COST: neither engine pays off here)."""
        return self.baseline_s is not None and self.objective == TIME and self.baseline_s < self.winner.median_s

    @property
    def arms(self) -> tuple[Arm, ...]:
        """Every arm measured: the winner, the arms tested against it, then those with too few trials."""
        return (self.winner, *(pair.other for pair in self.pairs), *self.untested)


@dataclass(frozen=True)
class EngineAnswer:
    """One engine's best arm against another's (Spark's against Dask's in a two-engine sweep), for one workload
    and epochs value; ratio = first / second."""

    workload: dict[str, Any]
    epochs: int
    first: Arm
    second: Arm
    ratio: float
    ratio_low: float
    ratio_high: float
    p: float
    verdict: str


@dataclass(frozen=True)
class Disturbed:
    """The ok measurements taken under load (``disturbed``), left out: how many of how many, and where."""

    left_out: int
    of: int
    hosts: tuple[str, ...]  # the nodes that were worst in them, most often first


@dataclass(frozen=True)
class Recommendation:
    """Everything ``sweeper recommend`` says about one sweep."""

    sweep: str
    objective: str
    accuracy_margin: float
    cost_per_node_hour: float | None
    budget: float | None
    answers: tuple[Answer, ...]
    engine_pairs: tuple[EngineAnswer, ...]  # every pair of the joblib engines measured, in the descriptors' order
    memory: tuple[MemoryAdvice, ...]
    idle: tuple[IdleSlots, ...]
    idle_threshold: float = LOW_UTILISATION
    unmeasured: tuple[Unmeasured, ...] = ()  # configurations without an ok row at some epochs, and why
    disturbed: Disturbed | None = None  # ok measurements taken under load, left out of every verdict
    score: str = DEFAULT_SCORE  # the scorer whose held-out score the accuracy check compares (workload.scoring)
    work_axis: str = EPOCHS  # what the answers' epochs count, as the views name it (n_estimators, ...)

    @property
    def overall(self) -> str:
        """One line over the answers (:func:`overall`)."""
        if not self.answers and self.disturbed is not None:
            return f"{MEASURED_UNDER_LOAD}: every ok measurement of an engine was taken under load"
        return overall(self.answers, self.work_axis)


# -- small statistics ---------------------------------------------------------------------------


def _holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given (NaN stays NaN, counted as 1).

    >>> [round(p, 6) for p in _holm([0.01, 0.04, 0.03])]
    [0.03, 0.06, 0.06]
    """
    p = np.nan_to_num(np.asarray(p_values, dtype=float), nan=1.0)
    m = p.size
    adjusted = np.empty(m)
    running = 0.0
    for rank, index in enumerate(np.argsort(p, kind="stable")):
        running = max(running, min(1.0, (m - rank) * p[index]))
        adjusted[index] = running
    return [math.nan if math.isnan(float(raw)) else float(a) for raw, a in zip(p_values, adjusted, strict=True)]


def trials_needed(a: np.ndarray, b: np.ndarray, pairs: int = 1, alpha: float = ALPHA) -> int | None:
    """Trials per arm that would tell ``a`` from ``b`` at their observed spread (module docstring).

    >>> trials_needed(np.array([10.0, 10.5, 11.0, 11.5, 12.0]), np.array([10.5, 11.0, 11.5, 12.0, 12.5]))
    42
    """
    log_a, log_b = np.log(a[a > 0]), np.log(b[b > 0])
    if log_a.size < 2 or log_b.size < 2:
        return None
    difference = abs(float(np.median(log_a) - np.median(log_b)))
    if difference == 0:
        return None
    variance = (np.var(log_a, ddof=1) + np.var(log_b, ddof=1)) / 2
    z = scipy_stats.norm.ppf(1 - alpha / (2 * pairs)) + scipy_stats.norm.ppf(POWER)
    needed = 2 * z**2 * variance / difference**2 / MANN_WHITNEY_EFFICIENCY
    return max(MIN_TRIALS, math.ceil(needed))


# -- the recommendation -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Options:
    objective: str
    accuracy_margin: float
    cost_per_node_hour: float | None
    budget: float | None
    alpha: float
    min_trials: int
    n_bootstrap: int
    seed: int


def recommend(
    df: pd.DataFrame,
    objective: str = TIME,
    accuracy_margin: float = ACCURACY_MARGIN,
    cost_per_node_hour: float | None = None,
    budget: float | None = None,
    alpha: float = ALPHA,
    min_trials: int = MIN_TRIALS,
    n_bootstrap: int = N_BOOTSTRAP,
    seed: int = SEED,
) -> Recommendation:
    """The answer for one sweep's rows: winners, Spark vs Dask, accuracy, memory and idle slots.

    Raises :class:`~sweeper.errors.UserError` for an unknown objective, a negative margin, a
    price or budget that is not a positive number, or a cost objective or budget without a price.
    """
    options = _Options(objective, accuracy_margin, cost_per_node_hour, budget, alpha, min_trials, n_bootstrap, seed)
    _check(options)
    answers: list[Answer] = []
    engines: list[EngineAnswer] = []
    loaded = _loaded_cells(df)  # ok_mask leaves their disturbed rows out of every statistic
    baselines, races = _baseline_medians(df), _settled_races(df)
    for workload, epochs, rows in _cells(df):
        arms = _arms(rows, options)
        cell = (_frozen(workload), epochs)
        if arms:
            answer = _answer(workload, epochs, rows, arms, options)
            delta, still_in = races.get(cell, (None, set()))
            near_tie = tuple(m.arm for m in arms if _configuration(m.arm) in still_in)
            answers.append(
                replace(
                    answer,
                    verdict=_held_back(answer.verdict, cell in loaded),
                    baseline_s=baselines.get(cell),
                    near_tie=near_tie if len(near_tie) > 1 else (),
                    near_tie_delta=delta if len(near_tie) > 1 else None,
                )
            )
        for engine_answer in _engine_pairs(workload, epochs, arms, options):
            engines.append(replace(engine_answer, verdict=_held_back(engine_answer.verdict, cell in loaded)))
    sweep = ", ".join(sorted(str(s) for s in df["sweep"].dropna().unique())) if "sweep" in df else ""
    return Recommendation(
        sweep=sweep,
        objective=objective,
        accuracy_margin=accuracy_margin,
        cost_per_node_hour=cost_per_node_hour,
        budget=budget,
        answers=tuple(answers),
        engine_pairs=tuple(engines),
        memory=tuple(memory_advice(df)),
        idle=tuple(idle_slots(df)),
        unmeasured=tuple(unmeasured(df)),
        disturbed=_disturbed(df),
        score=score_name(df),
        work_axis=work_axis_name(df),
    )


def score_name(df: pd.DataFrame) -> str:
    """The scorer of the rows' ``accuracy`` column: the ``scoring`` column's (null, stores before schema 11:
    accuracy); several sweeps of different scorers: their names joined."""
    named = sorted({str(s) for s in df["scoring"].dropna().unique()}) if "scoring" in df else []
    return " / ".join(named) or DEFAULT_SCORE


def _disturbed(df: pd.DataFrame) -> Disturbed | None:
    """What was left out as measured under load (None: nothing was)."""
    if "disturbed" not in df:
        return None
    ok = df["status"].eq(OK).fillna(False).astype(bool)
    flagged = df["disturbed"].fillna(False).astype(bool) & ok
    if not flagged.any():
        return None
    hosts: tuple[str, ...] = ()
    if "interference_host" in df:
        hosts = tuple(df.loc[flagged, "interference_host"].dropna().astype(str).value_counts().index)
    return Disturbed(int(flagged.sum()), int(ok.sum()), hosts)


def _loaded_cells(df: pd.DataFrame) -> set[tuple[tuple[tuple[str, Any], ...], int]]:
    """The workloads and epochs values with an ok row of an engine taken under load."""
    if "disturbed" not in df:
        return set()
    keys = statistics.workload_keys(df)
    flagged = df["disturbed"].fillna(False).astype(bool) & df["status"].eq(OK).fillna(False).astype(bool)
    flagged &= df["engine"].ne(BASELINE_ENGINE).fillna(False).astype(bool)
    cells = set()
    for values, _ in df[flagged].groupby([*keys, "epochs"], dropna=False, sort=True):
        workload = {key: plain_value(value) for key, value in zip(keys, values[:-1], strict=True)}
        cells.add((_frozen(workload), as_int(values[-1])))
    return cells


def _held_back(verdict: str, loaded: bool) -> str:
    """A verdict that lacks trials where some were taken under load says so, rather than that they are few."""
    return MEASURED_UNDER_LOAD if loaded and verdict in (TOO_FEW_TRIALS, ONE_CONFIGURATION) else verdict


def _check(options: _Options) -> None:
    """The flags' values, each by its key's kind (sections.RECOMMEND), and a cost asked for without a price."""
    problems = flag_problems(
        RECOMMEND,
        objective=options.objective,
        accuracy_margin=options.accuracy_margin,
        **{name: value for name in ("cost_per_node_hour", "budget") if (value := getattr(options, name)) is not None},
    )
    if options.cost_per_node_hour is None and (options.objective == COST or options.budget is not None):
        what = f"--objective {COST}" if options.objective == COST else "--budget"
        problems.append(f"{what} needs --cost-per-node-hour (the price of one node for an hour)")
    if problems:
        raise UserError(problems)


def _cells(df: pd.DataFrame) -> Iterator[tuple[dict[str, Any], int, pd.DataFrame]]:
    """(workload fields, epochs, ok rows of engines other than the baseline) per workload and epochs.

    The rows keep only the columns used here, numbers as float64 (NaN for missing): fast to group.
    """
    keys = statistics.workload_keys(df)
    numbers = [*CONFIG, "trial", "nodes", "fit_wall_s", "accuracy"]
    ok = df.loc[
        ok_mask(df) & df["engine"].ne(BASELINE_ENGINE).fillna(False).astype(bool),
        [*keys, "engine", "epochs", "status", *numbers],
    ].astype(dict.fromkeys(numbers, "float64"))
    if ok.empty:
        return
    for values, rows in ok.groupby([*keys, "epochs"], dropna=False, sort=True):
        workload = {key: plain_value(value) for key, value in zip(keys, values[:-1], strict=True)}
        yield workload, as_int(values[-1]), rows


def _frozen(workload: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((key, str(value)) for key, value in workload.items()))


def _baseline_medians(df: pd.DataFrame) -> dict[tuple[tuple[tuple[str, Any], ...], int], float]:
    """The baseline's median ``fit_wall_s`` per workload and epochs value (its ok rows)."""
    keys = statistics.workload_keys(df)
    rows = df.loc[
        ok_mask(df) & df["engine"].eq(BASELINE_ENGINE).fillna(False).astype(bool), [*keys, "epochs", "fit_wall_s"]
    ]
    medians = {}
    for values, group in rows.dropna(subset=["fit_wall_s"]).groupby([*keys, "epochs"], dropna=False, sort=True):
        workload = {key: plain_value(value) for key, value in zip(keys, values[:-1], strict=True)}
        medians[(_frozen(workload), as_int(values[-1]))] = float(group["fit_wall_s"].astype(float).median())
    return medians


Configuration = tuple[str, float, float, float]  # engine, cores per executor, executors, executor memory


def _configuration(arm: Arm) -> Configuration:
    return (arm.engine, float(arm.cores_per_executor), float(arm.executors), float(arm.executor_memory_gib))


def _settled_races(df: pd.DataFrame) -> dict[tuple[tuple[tuple[str, Any], ...], int], tuple[float, set[Configuration]]]:
    """Per workload and epochs value whose race settled: its delta and the configurations still in it (those
    without a ``left the race`` row)."""
    keys = statistics.workload_keys(df)
    rows = df[df["race_round"].notna().to_numpy()]
    settled = {}
    for values, group in rows.groupby([*keys, "epochs"], dropna=False, sort=True):
        reasons = group["stop_reason"].astype(object)
        if not reasons.eq(SETTLED).any():
            continue
        workload = {key: plain_value(value) for key, value in zip(keys, values[:-1], strict=True)}
        configs = group[["engine", *CONFIG]].astype({c: "float64" for c in CONFIG})
        left = {tuple(c) for c in configs[reasons.eq(LEFT).to_numpy()].itertuples(index=False)}
        still_in = {tuple(c) for c in configs.itertuples(index=False)} - left
        delta = float(group["race_delta"].dropna().iloc[0])
        settled[(_frozen(workload), as_int(values[-1]))] = (delta, still_in)
    return settled


class _Measured(NamedTuple):
    """An arm with its objective values (times, or costs per measurement) and accuracies."""

    arm: Arm
    values: np.ndarray
    accuracy: np.ndarray


def _arms(rows: pd.DataFrame, options: _Options) -> list[_Measured]:
    """Each arm of one workload and epochs value (rows of :func:`_cells`), lowest median first."""
    ids = group_ids(rows, ARM)
    times = rows["fit_wall_s"].to_numpy(dtype=float, na_value=np.nan)
    accuracies = rows["accuracy"].to_numpy(dtype=float, na_value=np.nan)
    nodes = rows["nodes"].to_numpy(dtype=float, na_value=1.0)
    found = []
    for first, positions in zip(first_rows(rows, ids), members(ids), strict=True):
        timed = positions[~np.isnan(times[positions])]
        times_s = times[timed]
        if times_s.size == 0:
            continue
        median, low, high = statistics.median_bootstrap_ci(times_s, options.n_bootstrap, options.seed)
        cores, executors = as_int(first["cores_per_executor"]), as_int(first["executors"])
        memory_gib = float(first["executor_memory_gib"])
        arm = Arm(str(first["engine"]), cores, executors, memory_gib, times_s.size, median, low, high)
        values = times_s
        if options.cost_per_node_hour is not None:
            costs = times_s / 3600 * nodes[timed] * options.cost_per_node_hour  # as statistics.price
            arm = replace(arm, median_cost=float(np.median(costs)))
            values = costs if options.objective == COST else times_s
        accuracy = accuracies[positions]
        found.append((_Measured(arm, values, accuracy[~np.isnan(accuracy)]), cores * executors))
    found.sort(key=lambda item: (float(np.median(item[0].values)), item[1]))
    return [measured for measured, _ in found]


def _answer(
    workload: dict[str, Any], epochs: int, rows: pd.DataFrame, arms: list[_Measured], options: _Options
) -> Answer:
    (winner, best_values, _), others = arms[0], arms[1:]
    runner_up = others[0].arm if others else None
    ratio, low, high = (
        statistics.ratio_of_medians(others[0].values, best_values, options.n_bootstrap, options.seed)
        if others
        else (math.nan, math.nan, math.nan)
    )
    tested = [(m.arm, m.values) for m in others if m.arm.n >= options.min_trials]
    untested = tuple(m.arm for m in others if m.arm.n < options.min_trials)
    pairs = _pairs(best_values, tested)
    verdict = _verdict(winner, runner_up, pairs, untested, options)
    unsettled = [values for (_, values), pair in zip(tested, pairs, strict=True) if not _settled(pair, options.alpha)]
    unsettled += [m.values for m in others if m.arm.n < options.min_trials]
    needed = _needed(best_values, unsettled, len(others), options) if verdict == INCONCLUSIVE else None
    return Answer(
        workload=workload,
        epochs=epochs,
        objective=options.objective,
        winner=winner,
        runner_up=runner_up,
        ratio=ratio,
        ratio_low=low,
        ratio_high=high,
        verdict=verdict,
        pairs=tuple(pairs),
        untested=untested,
        trials_needed=needed,
        accuracy=_accuracy_check(
            [(m.arm, m.accuracy) for m in arms],
            winner,
            options.accuracy_margin,
            identical_fits(rows),
            options.n_bootstrap,
            options.seed,
        ),
        within_budget=_within_budget(arms, options.budget),
    )


def _pairs(best_values: np.ndarray, tested: list[tuple[Arm, np.ndarray]]) -> list[Pair]:
    tests = [statistics.mann_whitney(best_values, values) for _, values in tested]
    adjusted = _holm([p for _, p in tests])
    return [
        Pair(arm, p, p_holm, bool(u < best_values.size * values.size / 2))
        for (arm, values), (u, p), p_holm in zip(tested, tests, adjusted, strict=True)
    ]


def _settled(pair: Pair, alpha: float) -> bool:
    return pair.winner_lower and not math.isnan(pair.p_holm) and pair.p_holm < alpha


def _verdict(
    winner: Arm, runner_up: Arm | None, pairs: list[Pair], untested: tuple[Arm, ...], options: _Options
) -> str:
    if runner_up is None:
        return ONE_CONFIGURATION
    if min(winner.n, runner_up.n) < options.min_trials:
        return TOO_FEW_TRIALS
    if untested or not all(_settled(pair, options.alpha) for pair in pairs):
        return INCONCLUSIVE
    return CHEAPER if options.objective == COST else FASTER


def _needed(best_values: np.ndarray, unsettled: list[np.ndarray], pairs: int, options: _Options) -> int | None:
    """The most trials per arm any unsettled pair needs (None when one of them cannot be settled)."""
    counts = [trials_needed(best_values, values, max(pairs, 1), options.alpha) for values in unsettled]
    if not counts or any(count is None for count in counts):
        return None
    return max(count for count in counts if count is not None)


def _within_budget(arms: list[_Measured], budget: float | None) -> Arm | None:
    """The fastest arm whose median cost per measurement is within the budget (None: none, or no budget)."""
    if budget is None:
        return None
    affordable = [m.arm for m in arms if m.arm.median_cost <= budget]
    return min(affordable, key=lambda arm: arm.median_s) if affordable else None


# -- engine against engine (Spark vs Dask, and every other pair) ------------------------------------------


def _engine_pairs(
    workload: dict[str, Any], epochs: int, arms: list[_Measured], options: _Options
) -> Iterator[EngineAnswer]:
    """Each joblib engine's best arm against every other's, pair by pair in the descriptors' order (Spark vs Dask
    in a two-engine sweep); none for an engine without an ok measurement."""
    best: dict[str, tuple[Arm, np.ndarray]] = {}
    for measured in arms:  # lowest median first
        best.setdefault(measured.arm.engine, (measured.arm, measured.values))
    compared = [name for name in figure_order(best) if (found := descriptor(name)) is not None and found.joblib]
    word = CHEAPER if options.objective == COST else FASTER
    for left, right in combinations(compared, 2):
        (first, first_values), (second, second_values) = best[left], best[right]
        ratio, low, high = statistics.ratio_of_medians(first_values, second_values, options.n_bootstrap, options.seed)
        verdict, p = statistics.pair_verdict(
            first_values, second_values, (left, right), options.alpha, options.min_trials, word
        )
        yield EngineAnswer(workload, epochs, first, second, ratio, low, high, p, verdict)


# -- accuracy -----------------------------------------------------------------------------------------


def _accuracy_check(
    samples: Sequence[tuple[Arm, np.ndarray]],
    winner: Arm,
    margin: float,
    identical: bool = False,
    n_bootstrap: int = N_BOOTSTRAP,
    seed: int = SEED,
) -> AccuracyCheck:
    """Is the winner's accuracy within ``margin`` of the most accurate arm's? (module docstring).

    ``samples``: each arm of one workload and epochs value with its accuracies; ``identical``: the
    fits were the same on every arm (:func:`identical_fits`).
    """
    measured = [(arm, values) for arm, values in samples if values.size]
    mine = next((values for arm, values in measured if arm == winner), None)
    if mine is None:
        return AccuracyCheck("not measured", margin)
    if len(measured) > 1 and identical:
        return AccuracyCheck("cannot differ", margin)
    best, theirs = max(measured, key=lambda item: float(np.median(item[1])))
    if best == winner or float(np.median(theirs)) <= float(np.median(mine)):
        return AccuracyCheck("most accurate", margin)
    difference = float(np.mean(mine) - np.mean(theirs))
    if min(mine.size, theirs.size) < 2:
        return AccuracyCheck(TOO_FEW_TRIALS, margin, best, difference)
    rng = np.random.default_rng(seed)
    mine_means = statistics.bootstrap(mine, n_bootstrap, rng, np.mean)
    their_means = statistics.bootstrap(theirs, n_bootstrap, rng, np.mean)
    low = float(np.quantile(mine_means - their_means, 0.05))
    status = "non-inferior" if low > -margin else "not shown non-inferior"
    return AccuracyCheck(status, margin, best, difference, low)


def identical_fits(rows: pd.DataFrame) -> bool:
    """Whether every trial's accuracy is the same on every arm that measured it (the same fits everywhere).

    ``rows``: ok rows of one workload and epochs value. True only when some trial was measured by
    at least two arms and no trial's accuracies differ by more than 1e-12.
    """
    measured = rows[rows["accuracy"].notna()]
    if measured.empty:
        return False
    by_trial = measured.groupby("trial", dropna=False)["accuracy"].agg(["min", "max", "size"])
    spans = (by_trial["max"] - by_trial["min"]).astype(float)
    return bool((by_trial["size"] >= 2).any() and (spans <= 1e-12).all())


def overall(answers: Sequence[Answer], axis: str = EPOCHS) -> str:
    """One line over the values of the work axis (named ``axis``): the same winner everywhere, or which values each
    winner takes; how many of the answers are settled, and how many were held back as measured under load."""
    if not answers:
        return "no answer: no ok measurement of an engine"
    winners: dict[str, list[int]] = {}
    for answer in answers:
        winners.setdefault(answer.winner.label, []).append(answer.epochs)
    settled = sum(answer.verdict in (FASTER, CHEAPER) for answer in answers)
    held = sum(answer.verdict == MEASURED_UNDER_LOAD for answer in answers)
    counts = f"{settled} of {len(answers)} settled" + (f", {held} {MEASURED_UNDER_LOAD}" if held else "")
    if len(winners) == 1:
        return f"{next(iter(winners))} wins at every {axis_point(axis)} ({counts})"
    parts = [f"{label} at {axis_text(epochs, axis)}" for label, epochs in winners.items()]
    depends = "workload" if axis == NO_WORK_AXIS_NAME else axis
    return f"the winner depends on the {depends}: " + "; ".join(parts) + f" ({counts})"

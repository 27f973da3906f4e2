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
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
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
    RUNG_AXIS,
)
from sweeper.config.sections import REPLAY, flag_problems, search_problems
from sweeper.errors import UserError
from sweeper.names import BASELINE_ENGINE, CONFIG
from sweeper.results.race_replay import race_repeat
from sweeper.results.statistics import FASTER, INCONCLUSIVE, config_label, ok_mask, pair_verdict
from sweeper.search.accounting import POINT, cluster_seconds, one_launch_s
from sweeper.search.adaptive import ADAPTIVE, TrialPolicy, stopping_trials
from sweeper.search.halving import HalvingPolicy, Measured, rung_values, successive_halving
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
        """The race's policy: its delta and confidence, from 2 trials to a fixed ``--trials N``, or with adaptive
        trials (the default) from 2 (or their min) to the trials the sweep recorded a point (``recorded_trials``):
        what its full grid took, so the two compare."""
        trials = self.trials
        first = max(RACE_MIN_TRIALS, trials.min_trials) if trials.adaptive else RACE_MIN_TRIALS
        most = min(trials.max_trials, recorded_trials) if trials.adaptive else trials.max_trials
        return RacePolicy(self.delta, self.confidence, min(first, most), most)


@dataclass(frozen=True)
class Race:
    """The configurations of one model point: their recorded times per rung and what they are."""

    point: str
    labels: list[str]
    engines: list[str]
    launches: np.ndarray  # [configuration, rung]: the launch_index that measured it
    nodes: np.ndarray
    samples: list[list[np.ndarray]]  # [configuration][rung]: recorded ok fit_wall_s

    @property
    def truth_s(self) -> np.ndarray:
        """The full grid's median per configuration at the largest rung."""
        return np.array([float(np.median(times[-1])) for times in self.samples])


def races(df: pd.DataFrame, rung_axis: str) -> tuple[list[Race], tuple[Any, ...], int]:
    """The races of a sweep, its rung values, and how many configurations were left out (a rung without ok trials)."""
    ok = df[ok_mask(df) & df["engine"].ne(BASELINE_ENGINE).fillna(False).astype(bool) & df["fit_wall_s"].notna()]
    rungs = rung_values(ok[rung_axis].dropna().tolist())
    point_columns = [c for c in POINT if c != rung_axis]
    config_columns = ["engine", "manager", *CONFIG, "nodes"]
    found, left_out = [], 0
    for point, group in ok.groupby(point_columns, dropna=False, sort=True):
        race = _race(group, point_columns, point, config_columns, rung_axis, rungs)
        left_out += group.groupby(config_columns, dropna=False).ngroups - len(race.labels)
        if len(race.labels) >= 2:
            found.append(race)
    if not found:
        raise UserError(
            "the sweep has no two configurations measured at every value of the rung axis "
            f"({rung_axis}: {', '.join(str(v) for v in rungs) or 'none'}); replay needs a sweep measured in full"
        )
    return found, rungs, left_out


def _race(
    group: pd.DataFrame, point_columns: list[str], point: Any, config_columns: list[str], axis: str, rungs: tuple
) -> Race:
    labels, engines, launches, nodes, samples = [], [], [], [], []
    for key, config in group.groupby(config_columns, dropna=False, sort=True):
        values = dict(zip(config_columns, key, strict=True))
        at_rung = [config[config[axis] == rung] for rung in rungs]
        times = [rows["fit_wall_s"].to_numpy(dtype=float) for rows in at_rung]
        if any(t.size == 0 for t in times):
            continue
        engines.append(str(values["engine"]))
        labels.append(f"{values['engine']} {config_label(*(values[c] for c in CONFIG))}")
        launches.append([int(rows["launch_index"].mode().iloc[0]) for rows in at_rung])
        nodes.append(1.0 if pd.isna(values["nodes"]) else float(values["nodes"]))
        samples.append(times)
    point_text = ", ".join(f"{c}={v}" for c, v in zip(point_columns, point, strict=True) if not pd.isna(v))
    return Race(point_text, labels, engines, np.array(launches, dtype=int), np.array(nodes), samples)


MAX_DRAWS = 2 * 10**8  # resampled times held at once (8 bytes each: 1.5 GiB); a replay's memory is bounded by it


def check_draws(found: Sequence[Race], repeats: int, max_trials: int) -> None:
    """Refuse ``--repeats`` x ``--max-trials`` (checked together) when the largest point's draws pass MAX_DRAWS."""
    largest = max((len(race.labels) * len(race.samples[0]) for race in found), default=0)
    draws = largest * repeats * max_trials
    if draws > MAX_DRAWS:
        raise UserError(
            f"replay: --repeats {repeats} x --max-trials {max_trials} over {largest} configurations and rungs is "
            f"{draws:.3g} resampled times ({draws * 8 / 2**30:.1f} GiB), more than {MAX_DRAWS:.0e}: "
            "lower --repeats or --max-trials"
        )


def dense_launches(found: list[Race], overhead: pd.Series) -> tuple[list[Race], pd.Series]:
    """The races and per-launch overhead with launch indices renumbered 0..K-1, so that arrays indexed by launch
    are as long as the launches there are, not as the largest index a store holds (999999)."""
    indices = np.unique(np.concatenate([overhead.index.to_numpy(dtype=int), *(r.launches.ravel() for r in found)]))
    renumbered = [replace(r, launches=np.searchsorted(indices, r.launches)) for r in found]
    dense = pd.Series(overhead.to_numpy(dtype=float), index=np.searchsorted(indices, overhead.index.to_numpy(int)))
    return renumbered, dense


def recorded_trials(found: Sequence[Race]) -> int:
    """The ok trials the sweep recorded a point (the median over every configuration and rung)."""
    return int(np.median([times.size for race in found for per_rung in race.samples for times in per_rung]))


@dataclass(frozen=True)
class Simulated:
    """Per configuration, rung and repeat: the resample's median, its node-seconds, trials, CI reached, and its draws
    (the first ``trials`` are the ones taken)."""

    median_s: np.ndarray
    cost_s: np.ndarray
    trials: np.ndarray
    ci_reached: np.ndarray
    draws: np.ndarray  # (configurations, rungs, repeats, max trials)

    def taken_s(self, repeat: int) -> Callable[[int, int], list[float]]:
        """The trials taken in ``repeat``, by (configuration, rung)."""
        return lambda c, g: self.draws[c, g, repeat, : self.trials[c, g, repeat]].tolist()


def simulate(race: Race, policy: TrialPolicy, repeats: int, rng: np.random.Generator) -> Simulated:
    """Resample every point of a race ``repeats`` times and stop each as the trial policy says."""
    shape = (len(race.labels), len(race.samples[0]), repeats)
    median_s, cost_s = np.empty(shape), np.empty(shape)
    trials, reached = np.empty(shape, dtype=int), np.empty(shape, dtype=bool)
    all_draws = np.empty((*shape, policy.max_trials))
    rows = np.arange(repeats)
    for c, per_rung in enumerate(race.samples):
        for g, recorded in enumerate(per_rung):
            draws = recorded[rng.integers(0, recorded.size, size=(repeats, policy.max_trials))]
            all_draws[c, g] = draws
            taken, stopped = stopping_trials(draws, policy)
            for n in np.unique(taken):
                median_s[c, g, taken == n] = np.median(draws[taken == n, :n], axis=1)
            cost_s[c, g] = np.cumsum(draws, axis=1)[rows, taken - 1] * race.nodes[c]
            trials[c, g], reached[c, g] = taken, stopped
    return Simulated(median_s, cost_s, trials, reached, all_draws)


@dataclass(frozen=True)
class Outcome:
    """One repeat of one race: the choice, the points measured, whether the rank check promoted more."""

    choice: int
    measured: np.ndarray  # (configurations, rungs) bool
    widened: bool


def run_strategy(
    strategy: str,
    medians_s: np.ndarray,
    policy: HalvingPolicy,
    engines: Sequence[str],
    times_s: Callable[[int, int], Sequence[float]] | None = None,
) -> Outcome:
    """The strategy's decisions on one repeat's medians (configurations x rungs); the best of each engine goes on.
    ``times_s(configuration, rung)``: the repeat's trials there, for halving's rank check (else the medians)."""
    n_configs, n_rungs = medians_s.shape
    measured = np.zeros((n_configs, n_rungs), dtype=bool)
    if strategy == "grid":
        measured[:] = True
        return Outcome(int(np.argmin(medians_s[:, -1])), measured, False)

    def measure(rung: int, keys: Any) -> dict[int, Measured]:
        measured[list(keys), rung] = True
        if times_s is not None:
            return {key: times_s(key, rung) for key in keys}
        return {key: float(medians_s[key, rung]) for key in keys}

    result = successive_halving(list(range(n_configs)), n_rungs, measure, policy, group=engines.__getitem__)
    return Outcome(result.best, measured, result.widened)


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
    check_draws(found, settings.repeats, settings.trials.max_trials)
    rng = np.random.default_rng(settings.seed)
    scope = df[df["engine"].ne(BASELINE_ENGINE).fillna(False).astype(bool)]
    found, overhead = dense_launches(found, one_launch_s(scope).sum(axis=1))
    reference_s = cluster_seconds(scope).total_s
    if settings.strategy == RACE:
        return _replay_race(settings, found, rungs, left_out, overhead, reference_s, rng, auto)
    spent_s = np.zeros(settings.repeats)
    launches_used = np.zeros((settings.repeats, len(rungs), int(overhead.index.max()) + 1), dtype=bool)
    regrets, wrong, widened = [], [], np.zeros(settings.repeats, dtype=bool)
    trials_taken, reached = [], []
    for race in found:
        simulated = simulate(race, settings.trials, settings.repeats, rng)
        truth_s = race.truth_s
        fastest_engine = _significant_engine(race)
        for repeat in range(settings.repeats):
            outcome = run_strategy(
                settings.strategy,
                simulated.median_s[:, :, repeat],
                settings.halving,
                race.engines,
                simulated.taken_s(repeat),
            )
            spent_s[repeat] += float(simulated.cost_s[:, :, repeat][outcome.measured].sum())
            used = np.nonzero(outcome.measured)
            launches_used[repeat, used[1], race.launches[used]] = True
            regrets.append(truth_s[outcome.choice] / truth_s.min() - 1)
            if fastest_engine is not None:
                wrong.append(race.engines[outcome.choice] != fastest_engine)
            widened[repeat] |= outcome.widened
            trials_taken.append(simulated.trials[:, :, repeat][outcome.measured])
            reached.append(simulated.ci_reached[:, :, repeat][outcome.measured])
    spent_s += _overhead_s(launches_used, overhead, settings.strategy)
    return _summary(settings, found, rungs, left_out, np.array(regrets), wrong, widened, spent_s, reference_s) | {
        "trials_mean": float(np.concatenate(trials_taken).mean()),
        "ci_reached": float(np.concatenate(reached).mean()) if settings.trials.adaptive else None,
        "race_settled": None,
        "auto_all_at_once": None,
    }


def _replay_race(
    settings: ReplaySettings,
    found: list[Race],
    rungs: tuple[Any, ...],
    left_out: int,
    overhead: pd.Series,
    reference_s: float,
    rng: np.random.Generator,
    auto: bool = False,
) -> dict[str, Any]:
    """:func:`replay` of ``race``: every (model point, rung value) raced, launches visited per look."""
    policy = settings.race(recorded_trials(found))
    visit_s = np.zeros(max(int(overhead.index.max()), *(int(r.launches.max()) for r in found)) + 1)
    visit_s[overhead.index.to_numpy(dtype=int)] = overhead.to_numpy(dtype=float)
    samples = [race.samples for race in found]
    launches, nodes = [race.launches for race in found], [race.nodes for race in found]
    engines = [_significant_engine(race) for race in found]
    spent_s, regrets, wrong, trials, settled = np.zeros(settings.repeats), [], [], [], []
    all_at_once = np.zeros(settings.repeats, dtype=bool)
    for repeat in range(settings.repeats):
        outcome = race_repeat(samples, launches, nodes, visit_s, policy, rng, auto)
        all_at_once[repeat] = outcome.all_at_once
        spent_s[repeat] = outcome.spent_s
        trials += outcome.trials
        settled += outcome.settled
        for race, choice, engine in zip(found, outcome.choices, engines, strict=True):
            regrets.append(race.truth_s[choice] / race.truth_s.min() - 1)
            if engine is not None:
                wrong.append(race.engines[choice] != engine)
    no_widening = np.zeros(settings.repeats, dtype=bool)
    return _summary(settings, found, rungs, left_out, np.array(regrets), wrong, no_widening, spent_s, reference_s) | {
        "trials_mean": float(np.mean(trials)),
        "ci_reached": None,
        "race_settled": float(np.mean(settled)),
        "auto_all_at_once": float(all_at_once.mean()) if auto else None,
    }


def _overhead_s(launches_used: np.ndarray, overhead: pd.Series, strategy: str) -> np.ndarray:
    """Per repeat: a start + warm-up + teardown per launch and rung (halving) or per launch (grid)."""
    per_launch = np.zeros(launches_used.shape[2])
    per_launch[overhead.index.to_numpy(dtype=int)] = overhead.to_numpy(dtype=float)
    starts = launches_used.any(axis=1) if strategy == "grid" else launches_used.sum(axis=1)
    return np.asarray(starts @ per_launch, dtype=float)


def _significant_engine(race: Race) -> str | None:
    """The full grid's faster engine at the largest rung, when its best beats the other engines' best (Mann-Whitney)."""
    truth_s = race.truth_s
    best: dict[str, int] = {}
    for index in np.argsort(truth_s, kind="stable"):
        best.setdefault(race.engines[index], int(index))
    if len(best) < 2:
        return None
    (first, a), (second, b) = list(best.items())[:2]
    times_a, times_b = race.samples[a][-1], race.samples[b][-1]
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
    settings: ReplaySettings,
    found: list[Race],
    rungs: tuple[Any, ...],
    left_out: int,
    regrets: np.ndarray,
    wrong: list[bool],
    widened: np.ndarray,
    spent_s: np.ndarray,
    reference_s: float,
) -> dict[str, Any]:
    """The replay's figures, with the stable keys of :data:`KEYS` (each strategy's own added by :func:`replay`)."""
    first = found[0]
    best = int(np.argmin(first.truth_s))
    verdicts = [_significant_engine(race) for race in found]
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
        "rungs": [_plain(value) for value in rungs],
        "races": len(found),
        "configurations": sum(len(race.labels) for race in found),
        "left_out": left_out,
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
        "engine_verdict": _verdicts_text(verdicts),
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

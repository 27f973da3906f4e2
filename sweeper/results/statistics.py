"""Statistics over a sweep's rows: Spark vs Dask, configurations, speedup, COST, price and halving's rungs.

Every function takes the DataFrame of :func:`sweeper.load_results` and returns a new one; none
reads files or keeps state. Only ``status == 'ok'`` rows enter a statistic; failed and timed-out
rows are counted in ``*failed`` columns and listed by :func:`failures`.

Measurements are compared only within one sweep and *workload* (dataset, training rows, batch
size, mode, model parameters, dry run or not) and one epoch count. Times are medians over trials with the
interquartile range (IQR) as spread.

Every verdict of the results (these tables, ``sweeper recommend``, ``sweeper replay``) uses one
vocabulary and, for a pair, one rule (:func:`pair_verdict`): Mann-Whitney U, two-sided, at ``ALPHA``,
as in ``asv compare``, with at least ``MIN_TRIALS`` ok trials on each side: ``"<name> faster"``
(``cheaper`` for cost), else ``INCONCLUSIVE``; ``TOO_FEW_TRIALS`` below the minimum.

Examples
--------
In a notebook, after a sweep::

    import sweeper
    from sweeper.results import statistics
    df = sweeper.load_results("results/")
    statistics.engines(df)[["config", "epochs", "ratio", "ratio_low", "ratio_high", "verdict"]]
    statistics.cost(df)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from sweeper.config.sections import RECOMMEND, flag_problems
from sweeper.engines import DASK, SPARK
from sweeper.errors import UserError
from sweeper.names import BASELINE_ENGINE, CONFIG, OK, PRUNED
from sweeper.results.groups import first_rows, group_ids, members
from sweeper.search.accounting import configuration_columns
from sweeper.search.halving import HalvingPolicy, rank_check
from sweeper.shapes import shape_text

WORKLOAD = ("sweep", "dataset", "n_train", "n_fits", "mode", "model_params", "dry_run")
ALPHA = 0.05
MIN_TRIALS = 5
N_BOOTSTRAP = 10_000
SEED = 0
FASTER = "faster"
CHEAPER = "cheaper"
INCONCLUSIVE = "inconclusive"
TOO_FEW_TRIALS = "too few trials"
ONE_CONFIGURATION = "one configuration"
MEASURED_UNDER_LOAD = "held back: measured under load"  # too few trials once the disturbed ones are left out
CONFIGURATIONS_DIFFER = "configurations differ"
NEVER = "never"
NO_BASELINE = "no baseline"


# -- small pure helpers -------------------------------------------------------------------


def config_label(cores_per_executor: Any, executors: Any, executor_memory_gib: Any, engine: str = "") -> str:
    """How a configuration is named in tables and plots: :func:`sweeper.shapes.shape_text`.

    >>> config_label(5, 7, 13.0)
    '7 executors x 5 cores x 13 GiB'
    >>> config_label(1, 1, 0.0, engine="local")
    '1 thread (baseline)'
    """
    return shape_text(executors, cores_per_executor, executor_memory_gib, baseline=engine == BASELINE_ENGINE)


def _label(values: Mapping[str, Any]) -> str:
    engine = values.get("engine", "")
    return config_label(
        values["cores_per_executor"], values["executors"], values["executor_memory_gib"], engine=str(engine)
    )


def ok_mask(df: pd.DataFrame) -> pd.Series:
    """True for the rows that enter statistics (``status == 'ok'`` and not ``disturbed``: measured under load,
    :mod:`sweeper.run.interference`), False for the rest (NA included)."""
    ok = df["status"].eq(OK).fillna(False).astype(bool)
    return ok & ~df["disturbed"].fillna(False).astype(bool) if "disturbed" in df else ok


def seconds(frame: pd.DataFrame, column: str = "fit_wall_s") -> np.ndarray:
    """The ok, non-missing values of a column as a float array."""
    values = frame.loc[ok_mask(frame), column].to_numpy(dtype=float, na_value=np.nan)
    return values[~np.isnan(values)]


def _quartiles(values: Sequence[float] | np.ndarray) -> tuple[float, float, float]:
    """First quartile, median and third quartile (NaN for no values).

    >>> _quartiles([10, 11, 12, 13, 14])
    (11.0, 12.0, 13.0)
    """
    array = np.asarray(values, dtype=float)
    if array.size == 0:
        return (np.nan, np.nan, np.nan)
    q1, median, q3 = np.quantile(array, [0.25, 0.5, 0.75])
    return (float(q1), float(median), float(q3))


BOOTSTRAP_CHUNK_VALUES = 4_000_000  # resampled values in memory at once (32 MB), whatever the number of trials


def bootstrap(
    values: np.ndarray, n_bootstrap: int, rng: np.random.Generator, statistic: Callable[..., np.ndarray] = np.median
) -> np.ndarray:
    """``statistic`` of ``n_bootstrap`` resamples (with replacement) of ``values``, drawn in bounded chunks.

    The same draws, in the same order, as one ``rng.choice(values, (n_bootstrap, values.size))``: seeded
    results do not change, and memory stays bounded for any number of trials.
    """
    per_chunk = max(1, BOOTSTRAP_CHUNK_VALUES // max(1, values.size))
    parts = []
    for start in range(0, n_bootstrap, per_chunk):
        rows = min(per_chunk, n_bootstrap - start)
        parts.append(statistic(rng.choice(values, size=(rows, values.size)), axis=1))
    return np.concatenate(parts) if parts else np.empty(0)


def median_bootstrap_ci(
    values: Sequence[float] | np.ndarray, n_bootstrap: int = N_BOOTSTRAP, seed: int = SEED
) -> tuple[float, float, float]:
    """The median and its ``1 - ALPHA`` (95 %) percentile-bootstrap interval (NaN for no values); for the
    order-statistic interval adaptive trials stop on, see :func:`sweeper.search.adaptive.median_rank_ci`.

    >>> median, low, high = median_bootstrap_ci([10, 11, 12, 13, 14])
    >>> median, 10 <= low <= median <= high <= 14
    (12.0, True)
    """
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return (np.nan, np.nan, np.nan)
    medians = bootstrap(x, n_bootstrap, np.random.default_rng(seed))
    low, high = np.quantile(medians, [ALPHA / 2, 1 - ALPHA / 2])
    return (float(np.median(x)), float(low), float(high))


def ratio_of_medians(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    n_bootstrap: int = N_BOOTSTRAP,
    seed: int = SEED,
    confidence: float = 1 - ALPHA,
) -> tuple[float, float, float]:
    """``median(a) / median(b)`` with a percentile-bootstrap confidence interval.

    Each sample is resampled with replacement on its own, ``n_bootstrap`` times, from a
    generator seeded with ``seed``: the same numbers give the same interval every time.

    >>> ratio, low, high = ratio_of_medians([10, 11, 12, 13, 14], [5, 6, 7, 8, 9])
    >>> round(ratio, 4), low <= ratio <= high
    (1.7143, True)
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size == 0 or y.size == 0:
        return (np.nan, np.nan, np.nan)
    rng = np.random.default_rng(seed)
    x_medians = bootstrap(x, n_bootstrap, rng)
    y_medians = bootstrap(y, n_bootstrap, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = float(np.median(x) / np.median(y))
        ratios = x_medians / y_medians
    tail = (1 - confidence) / 2
    low, high = np.quantile(ratios, [tail, 1 - tail])
    return (ratio, float(low), float(high))


def mann_whitney(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """Mann-Whitney U of ``a`` and the two-sided p-value (scipy: exact for small samples without ties).

    ``U > len(a) * len(b) / 2`` means ``a`` tends to be larger. NaN when a sample is empty;
    p = 1 when every value is the same.

    >>> u, p = mann_whitney([10, 11, 12, 13, 14], [5, 6, 7, 8, 9])
    >>> u, round(p, 4)
    (25.0, 0.0079)
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size == 0 or y.size == 0:
        return (np.nan, np.nan)
    if np.unique(np.concatenate([x, y])).size == 1:
        return (x.size * y.size / 2, 1.0)
    result = stats.mannwhitneyu(x, y, alternative="two-sided")
    return (float(result.statistic), float(result.pvalue))


def welch_p(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Two-sided p-value of Welch's t-test (unequal variances); NaN when it is undefined.

    >>> round(welch_p([10, 11, 12, 13, 14], [5, 6, 7, 8, 9]), 4)
    0.0011
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size < 2 or y.size < 2:
        return np.nan
    return _p_value(stats.ttest_ind, x, y, equal_var=False)


def _p_value(test: Callable[..., Any], *samples: np.ndarray, **options: Any) -> float:
    """A scipy test's p-value, NaN when the test is undefined for the data (constant groups and the like)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return float(test(*samples, **options).pvalue)
        except ValueError:
            return np.nan


def pareto_front(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> np.ndarray:
    """Which points no other point beats on both ``x`` and ``y`` (both minimised; NaN never on it).

    Negate a column to maximise it (accuracy).

    >>> pareto_front([1, 2, 3, 2], [3, 1, 2, 1]).tolist()
    [True, True, False, True]
    """
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    valid = ~(np.isnan(xs) | np.isnan(ys))
    front = valid.copy()
    for i in np.flatnonzero(valid):
        no_worse = valid & (xs <= xs[i]) & (ys <= ys[i])
        better = (xs < xs[i]) | (ys < ys[i])
        front[i] = not np.any(no_worse & better)
    return front


def _lower_side(a: np.ndarray, b: np.ndarray, names: tuple[str, str], alpha: float = ALPHA) -> tuple[str | None, float]:
    """The name of the side with the lower values when Mann-Whitney tells them apart at ``alpha`` (else None), and p.

    >>> _lower_side(np.array([10, 11, 12, 13, 14.0]), np.array([5, 6, 7, 8, 9.0]), ("spark", "dask"))[0]
    'dask'
    """
    u, p = mann_whitney(a, b)
    if np.isnan(p) or p >= alpha:
        return None, p
    return (names[1] if u > a.size * b.size / 2 else names[0]), p


def pair_verdict(
    a: np.ndarray,
    b: np.ndarray,
    names: tuple[str, str],
    alpha: float = ALPHA,
    min_trials: int = MIN_TRIALS,
    word: str = FASTER,
) -> tuple[str, float]:
    """The verdict on two samples of the objective (lower is better), and the Mann-Whitney p.

    >>> pair_verdict(np.array([10, 11, 12, 13, 14.0]), np.array([5, 6, 7, 8, 9.0]), ("spark", "dask"))[0]
    'dask faster'
    >>> pair_verdict(np.array([10, 11.0]), np.array([5, 6.0]), ("spark", "dask"))[0]
    'too few trials'
    """
    lower, p = _lower_side(a, b, names, alpha)
    if min(a.size, b.size) < min_trials:
        return TOO_FEW_TRIALS, p
    return (INCONCLUSIVE if lower is None else f"{lower} {word}"), p


def workload_keys(df: pd.DataFrame) -> list[str]:
    """The sweep and workload columns present in ``df``: measurements compare only within one workload."""
    return [column for column in WORKLOAD if column in df.columns]


def _groups(df: pd.DataFrame, keys: Sequence[str]) -> Iterator[tuple[dict[str, Any], pd.DataFrame]]:
    if df.empty:
        return
    for values, group in df.groupby(list(keys), dropna=False, sort=True):
        yield dict(zip(keys, values, strict=True)), group


def _samples(ok: pd.DataFrame, keys: Sequence[str]) -> list[np.ndarray]:
    """The non-missing times of each group of ``keys`` of ok rows, groups in sorted order (as :func:`seconds` of
    each)."""
    if ok.empty:
        return []
    times = ok["fit_wall_s"].to_numpy(dtype=float, na_value=np.nan)
    return [values[~np.isnan(values)] for values in (times[positions] for positions in members(group_ids(ok, keys)))]


def _frame(rows: list[dict[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(columns)).reset_index(drop=True)


def failed_mask(df: pd.DataFrame) -> pd.Series:
    """True for the rows that did not finish ok (failed, timeout); a ``pruned`` row was never measured."""
    return ~ok_mask(df) & df["status"].ne(PRUNED).fillna(True).astype(bool)


def _failed(frame: pd.DataFrame) -> int:
    return int(failed_mask(frame).sum())


# -- tables ---------------------------------------------------------------------------------


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per workload, engine, configuration and epochs: medians and IQR of time and accuracy.

    Columns: the workload columns, ``engine``, ``cores_per_executor``, ``executors``,
    ``executor_memory_gib``, ``total_cores``, ``nodes``, ``epochs``, ``config`` (a label), ``n``
    (ok trials), ``failed`` (failed or timed out), ``median_s``, ``q1_s``, ``q3_s``, ``iqr_s``,
    ``accuracy`` (median), ``accuracy_iqr``.
    """
    keys = [*workload_keys(df), "engine", *CONFIG, "total_cores", "nodes", "epochs"]
    columns = [*keys, "config", "n", "failed", "median_s", "q1_s", "q3_s", "iqr_s", "accuracy", "accuracy_iqr"]
    if df.empty:
        return _frame([], columns)
    columns_of = _Columns.of(df)
    ids = group_ids(df, keys)
    rows = []
    for first, positions in zip(first_rows(df, ids), members(ids), strict=True):
        key = {name: first[name] for name in keys}
        times, accuracies = columns_of.ok_values(positions)
        q1, median, q3 = _quartiles(times)
        a1, accuracy, a3 = _quartiles(accuracies)
        rows.append(
            {
                **key,
                "config": _label(key),
                "n": times.size,
                "failed": columns_of.failed_count(positions),
                "median_s": median,
                "q1_s": q1,
                "q3_s": q3,
                "iqr_s": q3 - q1,
                "accuracy": accuracy,
                "accuracy_iqr": a3 - a1,
            }
        )
    return _frame(rows, columns)


@dataclass(frozen=True)
class _Columns:
    """A frame's times, accuracies and outcomes as arrays, read once for many groups of its rows."""

    times: np.ndarray
    accuracies: np.ndarray
    ok: np.ndarray
    failed: np.ndarray

    @classmethod
    def of(cls, df: pd.DataFrame) -> _Columns:
        return cls(
            df["fit_wall_s"].to_numpy(dtype=float, na_value=np.nan),
            df["accuracy"].to_numpy(dtype=float, na_value=np.nan),
            ok_mask(df).to_numpy(),
            failed_mask(df).to_numpy(),
        )

    def ok_values(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The ok, non-missing times and accuracies of the rows at ``positions`` (as :func:`seconds`)."""
        ok = positions[self.ok[positions]]
        times, accuracies = self.times[ok], self.accuracies[ok]
        return times[~np.isnan(times)], accuracies[~np.isnan(accuracies)]

    def failed_count(self, positions: np.ndarray) -> int:
        return int(self.failed[positions].sum())


def engines(
    df: pd.DataFrame,
    left: str = SPARK,
    right: str = DASK,
    alpha: float = ALPHA,
    min_trials: int = MIN_TRIALS,
    n_bootstrap: int = N_BOOTSTRAP,
    seed: int = SEED,
) -> pd.DataFrame:
    """Spark vs Dask side by side, per workload, configuration and epochs.

    For each engine (column prefix ``spark_``/``dask_``): ``n`` ok trials, ``failed``,
    ``median_s``, ``iqr_s``, ``accuracy`` (median). Then ``ratio`` = spark median / dask median
    with its bootstrap 95 % interval ``ratio_low``..``ratio_high``, the Mann-Whitney ``mwu_p``
    and Welch ``welch_p`` p-values (two-sided) and ``verdict``: ``"dask faster"``,
    ``"spark faster"``, ``"inconclusive"`` (:func:`pair_verdict` at ``alpha``), or
    ``"too few trials"`` when either side has fewer than ``min_trials`` ok trials.
    """
    keys = [*workload_keys(df), *CONFIG, "epochs"]
    pair = df[df["engine"].isin([left, right]).fillna(False).astype(bool)]
    per_engine = [f"{e}_{c}" for e in (left, right) for c in ("n", "failed", "median_s", "iqr_s", "accuracy")]
    columns = [*keys, "total_cores", "config", *per_engine, "ratio", "ratio_low", "ratio_high", "mwu_p", "welch_p"]
    if pair.empty:
        return _frame([], [*columns, "verdict"])
    columns_of = _Columns.of(pair)
    engine = pair["engine"].to_numpy()
    total_cores = pair["total_cores"].to_numpy()
    ids = group_ids(pair, keys)
    rows = []
    for first, positions in zip(first_rows(pair, ids), members(ids), strict=True):
        key = {name: first[name] for name in keys}
        sides = {name: positions[engine[positions] == name] for name in (left, right)}
        row: dict[str, Any] = {**key, "total_cores": total_cores[positions].max(), "config": _label(key)}
        values = {}
        for name, side in sides.items():
            times, accuracies = columns_of.ok_values(side)
            values[name] = times
            q1, median, q3 = _quartiles(times)
            row.update(
                {
                    f"{name}_n": times.size,
                    f"{name}_failed": columns_of.failed_count(side),
                    f"{name}_median_s": median,
                    f"{name}_iqr_s": q3 - q1,
                    f"{name}_accuracy": _quartiles(accuracies)[1],
                }
            )
        a, b = values[left], values[right]
        ratio, low, high = ratio_of_medians(a, b, n_bootstrap=n_bootstrap, seed=seed)
        verdict, p = pair_verdict(a, b, (left, right), alpha, min_trials)
        row.update(ratio=ratio, ratio_low=low, ratio_high=high, mwu_p=p, welch_p=welch_p(a, b), verdict=verdict)
        rows.append(row)
    return _frame(rows, [*columns, "verdict"])


def configs(df: pd.DataFrame, alpha: float = ALPHA, min_trials: int = MIN_TRIALS) -> pd.DataFrame:
    """Configurations compared, per workload, engine (baseline excluded) and epochs.

    Columns: ``n_configs`` (with ok trials), ``fastest`` (its label), ``fastest_total_cores``,
    ``fastest_median_s``, ``second`` and ``second_over_fastest`` (how many times slower the
    second fastest is), ``slowest`` and ``slowest_over_fastest``, ``kruskal_p`` (Kruskal-Wallis),
    ``anova_p`` (one-way ANOVA), ``failed`` and ``verdict``: ``"configurations differ"`` or
    ``"inconclusive"`` (Kruskal-Wallis at ``alpha``), ``"too few trials"`` when a
    configuration has fewer than ``min_trials`` ok trials, ``"one configuration"``.
    """
    keys = [*workload_keys(df), "engine", "epochs"]
    engines_only = df[df["engine"].ne(BASELINE_ENGINE).fillna(False).astype(bool)]
    rows = []
    for key, group in _groups(engines_only, keys):
        shapes = summary(group)
        shapes = shapes[shapes["n"] > 0].sort_values(["median_s", "total_cores"], kind="stable")
        samples = _samples(group[ok_mask(group)], list(CONFIG))
        labels = shapes["config"].tolist()
        medians = shapes["median_s"].to_numpy(dtype=float)
        many = len(samples) >= 2
        row: dict[str, Any] = {
            **key,
            "n_configs": len(samples),
            "fastest": labels[0] if labels else None,
            "fastest_total_cores": shapes["total_cores"].iloc[0] if labels else pd.NA,
            "fastest_median_s": medians[0] if labels else np.nan,
            "second": labels[1] if many else None,
            "second_over_fastest": medians[1] / medians[0] if many else np.nan,
            "slowest": labels[-1] if many else None,
            "slowest_over_fastest": medians[-1] / medians[0] if many else np.nan,
            "kruskal_p": _p_value(stats.kruskal, *samples) if many else np.nan,
            "anova_p": _p_value(stats.f_oneway, *samples) if many else np.nan,
            "failed": _failed(group),
        }
        if not many:
            row["verdict"] = ONE_CONFIGURATION if samples else "no ok measurements"
        elif min(len(s) for s in samples) < min_trials:
            row["verdict"] = TOO_FEW_TRIALS
        else:
            differ = not np.isnan(row["kruskal_p"]) and row["kruskal_p"] < alpha
            row["verdict"] = CONFIGURATIONS_DIFFER if differ else INCONCLUSIVE
        rows.append(row)
    columns = [
        *keys,
        "n_configs",
        "fastest",
        "fastest_total_cores",
        "fastest_median_s",
        "second",
        "second_over_fastest",
        "slowest",
        "slowest_over_fastest",
        "kruskal_p",
        "anova_p",
        "failed",
        "verdict",
    ]
    return _frame(rows, columns)


def speedup(df: pd.DataFrame) -> pd.DataFrame:
    """Speedup of every engine and configuration over the single-thread baseline.

    The baseline is engine ``local`` with the same workload and epochs. Columns: those of
    :func:`summary` (baseline rows left out) plus ``baseline_median_s``, ``speedup`` (baseline
    median / median) and ``efficiency`` (speedup per core). NaN where there is no baseline.
    """
    table = summary(df)
    keys = [*workload_keys(df), "epochs"]
    is_baseline = table["engine"] == BASELINE_ENGINE
    baseline = table.loc[is_baseline, [*keys, "median_s"]].rename(columns={"median_s": "baseline_median_s"})
    baseline = baseline.groupby(keys, dropna=False, as_index=False)["baseline_median_s"].min()
    merged = table[~is_baseline].merge(baseline, on=keys, how="left")
    merged["speedup"] = merged["baseline_median_s"].astype(float) / merged["median_s"].astype(float)
    merged["efficiency"] = merged["speedup"] / merged["total_cores"].astype(float)
    return merged.reset_index(drop=True)


def cost(df: pd.DataFrame) -> pd.DataFrame:
    """McSherry's COST per workload, engine and epochs: the fewest cores that beat one thread.

    COST (McSherry, Isard and Murray, "Scalability! But at what COST?", HotOS 2015) is the
    smallest configuration, in ``total_cores``, whose median time beats the single-thread
    baseline's median. Columns: ``baseline_median_s``, ``cost`` (the core count as text,
    ``"never"`` when no configuration beats the baseline, ``"no baseline"``), ``cost_cores``
    (nullable integer), ``cost_config`` (its label), ``best_speedup`` and ``best_config``.
    """
    table = speedup(df)
    keys = [*workload_keys(df), "engine", "epochs"]
    rows = []
    for key, group in _groups(table[table["n"] > 0], keys):
        baseline_s = group["baseline_median_s"].astype(float).min()
        beats = group[group["median_s"].astype(float) < baseline_s].sort_values(["total_cores", "median_s"])
        best = group.sort_values("speedup", ascending=False, kind="stable").iloc[0]
        if np.isnan(baseline_s):
            verdict, cores, label = NO_BASELINE, pd.NA, None
        elif beats.empty:
            verdict, cores, label = NEVER, pd.NA, None
        else:
            cores, label = int(beats["total_cores"].iloc[0]), beats["config"].iloc[0]
            verdict = str(cores)
        rows.append(
            {
                **key,
                "baseline_median_s": baseline_s,
                "cost": verdict,
                "cost_cores": cores,
                "cost_config": label,
                "best_speedup": best["speedup"],
                "best_config": best["config"],
            }
        )
    columns = [*keys, "baseline_median_s", "cost", "cost_cores", "cost_config", "best_speedup", "best_config"]
    frame = _frame(rows, columns)
    frame["cost_cores"] = frame["cost_cores"].astype("Int64")
    return frame


def price(df: pd.DataFrame, cost_per_node_hour: float) -> pd.DataFrame:
    """What each configuration costs, and the time-vs-cost Pareto frontier per workload and epochs.

    Cost of one measurement = ``fit_wall_s / 3600 x nodes x cost_per_node_hour`` (the baseline
    uses one node). Columns: those of :func:`summary` plus ``cost_per_node_hour``,
    ``median_cost`` (median over ok trials) and ``pareto`` (True when no other configuration is
    both faster and cheaper).
    """
    problems = flag_problems(RECOMMEND, cost_per_node_hour=cost_per_node_hour)
    if problems:
        raise UserError(problems)
    table = summary(df)
    nodes = table["nodes"].astype(float)
    table["cost_per_node_hour"] = float(cost_per_node_hour)
    table["median_cost"] = table["median_s"].astype(float) / 3600 * nodes * cost_per_node_hour
    table["pareto"] = False
    for _, group in _groups(table, [*workload_keys(df), "epochs"]):
        table.loc[group.index, "pareto"] = pareto_front(group["median_s"], group["median_cost"])
    return table


def failures(df: pd.DataFrame) -> pd.DataFrame:
    """Every failed or timed-out row (never dropped silently), oldest first, with its error."""
    columns = ["started_at", "engine", "config", "epochs", "trial", "status", "error_type", "error", "host", "run_id"]
    bad = df[failed_mask(df)].copy()
    bad["config"] = [_label(row) for _, row in bad.iterrows()]
    return bad[columns].reset_index(drop=True)


def pruned(df: pd.DataFrame) -> pd.DataFrame:
    """Every ``pruned`` row: a configuration successive halving did not measure at that rung."""
    rows = df[df["status"].eq(PRUNED).fillna(False).astype(bool)].copy()
    rows["config"] = [_label(row) for _, row in rows.iterrows()]
    return rows[["engine", "config", "epochs", "fraction", "rung", "error"]].reset_index(drop=True)


def race_standings(df: pd.DataFrame) -> pd.DataFrame:
    """Per race point and configuration of a race sweep: ok trials, the decisions it took part in, how it ended.

    Columns: ``engine``, ``config``, ``epochs``, ``fraction``, ``trials`` (ok rows), ``decisions`` (the last
    ``race_round`` it was measured for), ``ended`` (the stop reason of its ``pruned`` row: ``left the race`` or
    ``race settled``; else ``max trials``) and ``median_s``; fastest first within each point.
    """
    rows = df[df["race_round"].notna().to_numpy()]
    keys = [*workload_keys(rows), "engine", *CONFIG, "epochs", "fraction"]  # a race is one workload point
    lines = []
    for key, group in rows.groupby(keys, dropna=False, sort=False):
        values = dict(zip(keys, key, strict=True))
        ok = group[ok_mask(group)]
        decided = group.loc[group["status"].eq(PRUNED).fillna(False).astype(bool), "stop_reason"].dropna()
        lines.append(
            {
                "engine": values["engine"],
                "config": _label(values),
                "epochs": values["epochs"],
                "fraction": values["fraction"],
                "trials": len(ok),
                "decisions": int(group["race_round"].max()),
                "ended": str(decided.iloc[0]) if len(decided) else "max trials",
                "median_s": float(ok["fit_wall_s"].median()) if len(ok) else math.nan,
            }
        )
    table = pd.DataFrame(lines, columns=["engine", "config", "epochs", "fraction", "trials", "decisions", "ended",
                                         "median_s"])  # fmt: skip
    return table.sort_values(["epochs", "fraction", "median_s"], kind="stable").reset_index(drop=True)


def _rung_policy(rows: pd.DataFrame) -> HalvingPolicy:
    """The rank check's delta and confidence as the sweep's rows record them (the defaults for rows before they did,
    or where a value is out of the grid's range: a hand-written store)."""
    delta, confidence = rows["race_delta"].dropna(), rows["race_confidence"].dropna()
    if delta.empty or confidence.empty:
        return HalvingPolicy()
    try:
        return HalvingPolicy(tie_rel=float(delta.iloc[0]), confidence=float(confidence.iloc[0]))
    except UserError:
        return HalvingPolicy()


def rungs(df: pd.DataFrame, rung_axis: str) -> pd.DataFrame:
    """Per rung of a halving sweep: what it measured and pruned, and how well the rung before predicted it.

    Columns: ``rung``, ``values`` (its sorted values of ``rung_axis``), ``measured`` (configurations
    with an ok row), ``pruned`` (its ``pruned`` rows), ``agreement`` (Kendall's tau-b of the
    configurations' times at this rung and the previous one, pairs confidently apart only, by
    :func:`sweeper.search.halving.rank_check` from the ok trials as the runner checks them; NaN at the first
    rung, with fewer than 2 configurations at both, or with no pair confidently apart) and
    ``compared`` (the configurations it compares).
    """
    columns = [c for c in configuration_columns(rung_axis) if c in df]
    rows = df[df["rung"].notna()]
    rows = rows.assign(configuration=rows.groupby(columns, dropna=False, sort=False).ngroup())
    lines: list[dict[str, Any]] = []
    previous: dict[Any, list[float]] | None = None
    policy = _rung_policy(rows)
    for rung, at in rows.groupby("rung", sort=True):
        ok = at[ok_mask(at)]
        medians = {key: [float(t) for t in times] for key, times in ok.groupby("configuration")["fit_wall_s"]}
        check = None if previous is None else rank_check(previous, medians, policy)
        lines.append(
            {
                "rung": int(rung),
                "values": tuple(sorted(at[rung_axis].dropna().unique())),
                "measured": len(medians),
                "pruned": int(at["status"].eq(PRUNED).sum()),
                "agreement": np.nan if check is None or check.agreement is None else check.agreement,
                "compared": 0 if check is None else check.configurations,
            }
        )
        previous = medians
    return _frame(lines, ["rung", "values", "measured", "pruned", "agreement", "compared"])

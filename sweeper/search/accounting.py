"""Cluster-seconds of a sweep from its rows, and what the full grid would have cost.

A launch (``run_id``, ``launch_index``) holds its cluster for its start, warm-up, measured
batches and teardown, on ``nodes`` nodes; cluster-seconds are these wall seconds times nodes.
The runner sets ``cluster_start_s`` and ``warmup_s`` on every row of a session (one start of the
launch; a launch starts again after a measurement that was not ok) and, when it compacts a
launch's files, ``teardown_s`` on every row it took with that launch, so each is counted once: a
start and a warm-up per distinct ``cluster_start_s`` of the launch, a teardown per distinct
``teardown_s`` (one per launch today; one per rung when halving starts a launch per rung). Rows of
a launch that did not start (error "launch did not start") each carry the time until it failed:
it is counted once, the longest. Every measured batch counts, ok or not; ``pruned`` rows measured
nothing and are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sweeper.config.grid import RUNG_AXES, RUNG_AXIS
from sweeper.names import CONFIG, FAILED, OK, PRUNED

NOT_STARTED = "launch did not start"
LAUNCH = ("run_id", "launch_index")
POINT = ("dataset", "mode", "n_fits", "model_params", "fraction", "epochs")


@dataclass(frozen=True)
class ClusterSeconds:
    """Node-seconds of a sweep by part."""

    start_s: float
    warmup_s: float
    measured_s: float
    teardown_s: float

    @property
    def total_s(self) -> float:
        return self.start_s + self.warmup_s + self.measured_s + self.teardown_s

    @property
    def measured_share(self) -> float:
        """The share of the cluster-seconds spent in measured batches (NaN for none)."""
        return self.measured_s / self.total_s if self.total_s > 0 else float("nan")


def configuration_columns(rung_axis: str = RUNG_AXES[0]) -> list[str]:
    """What names one configuration (launch shape x model point), the rung axis left out."""
    return ["engine", "manager", *CONFIG, "nodes", *(c for c in POINT if c != rung_axis)]


def _floats(df: pd.DataFrame, column: str) -> np.ndarray:
    return df[column].to_numpy(dtype=float, na_value=np.nan)


def launch_seconds(df: pd.DataFrame) -> pd.DataFrame:
    """Per launch (``run_id``, ``launch_index``): ``nodes``, ``sessions``, ``teardowns`` and wall seconds by part."""
    kept = df[df["status"].ne(PRUNED).fillna(True).astype(bool)]
    error = kept["error"].astype(object).fillna("").astype(str)
    frame = pd.DataFrame(
        {
            "run_id": kept["run_id"].astype(object).fillna(""),
            "launch_index": kept["launch_index"].to_numpy(dtype=float, na_value=-1).astype(int),
            "nodes": np.nan_to_num(_floats(kept, "nodes"), nan=1.0),
            "start": _floats(kept, "cluster_start_s"),
            "warmup": _floats(kept, "warmup_s"),
            "fit": _floats(kept, "fit_wall_s"),
            "teardown": _floats(kept, "teardown_s"),
            "not_started": (kept["status"].eq(FAILED).fillna(False) & error.str.startswith(NOT_STARTED)).to_numpy(),
        }
    )
    keys = list(LAUNCH)
    started = frame[~frame["not_started"] & frame["start"].notna()]
    sessions = started.groupby([*keys, "start"], sort=False)["warmup"].max().reset_index()
    teardowns = frame.dropna(subset=["teardown"]).drop_duplicates([*keys, "teardown"])
    parts = frame.groupby(keys).agg(nodes=("nodes", "max"), measured_s=("fit", "sum"))
    parts = parts.join(
        sessions.groupby(keys).agg(sessions=("start", "size"), start_s=("start", "sum"), warmup_s=("warmup", "sum"))
    )
    parts = parts.join(teardowns.groupby(keys).agg(teardowns=("teardown", "size"), teardown_s=("teardown", "sum")))
    parts = parts.join(frame[frame["not_started"]].groupby(keys)["start"].max().rename("failed_start_s"))
    zero = {"sessions": 0, "teardowns": 0, "start_s": 0.0, "warmup_s": 0.0, "teardown_s": 0.0, "failed_start_s": 0.0}
    parts = parts.fillna(zero)
    parts["start_s"] += parts.pop("failed_start_s")
    parts[["sessions", "teardowns"]] = parts[["sessions", "teardowns"]].astype(int)
    return parts.reset_index()


def cluster_seconds(df: pd.DataFrame) -> ClusterSeconds:
    """What a sweep's rows cost in node-seconds: start, warm-up, measured batches, teardown."""
    if df.empty:
        return ClusterSeconds(0.0, 0.0, 0.0, 0.0)
    parts = launch_seconds(df)
    nodes = parts["nodes"].to_numpy(dtype=float)
    return ClusterSeconds(
        *(float(np.sum(parts[part].to_numpy(dtype=float) * nodes)) for part in _PARTS),
    )


_PARTS = ("start_s", "warmup_s", "measured_s", "teardown_s")


def one_launch_s(df: pd.DataFrame) -> pd.DataFrame:
    """Per ``launch_index``: node-seconds of one start, warm-up and teardown (per session; medians over runs)."""
    parts = launch_seconds(df)
    sessions = parts["sessions"].clip(lower=1)
    one = pd.DataFrame(
        {
            "launch_index": parts["launch_index"],
            "start_s": parts["start_s"] / sessions * parts["nodes"],
            "warmup_s": parts["warmup_s"] / sessions * parts["nodes"],
            "teardown_s": parts["teardown_s"] / parts["teardowns"].clip(lower=1) * parts["nodes"],
        }
    )
    return one.groupby("launch_index").median()


def warm_launch_s(df: pd.DataFrame) -> pd.Series:
    """Per ``launch_index``: node-seconds of coming back to a launch, a warm node's start (its own start, at most the
    median per node of its engine's other launches': the first launch on a node pays what later ones find there,
    such as YARN's localized jars and environment), its warm-up and teardown."""
    one = one_launch_s(df)
    parts = launch_seconds(df).groupby("launch_index")["nodes"].max().reindex(one.index).clip(lower=1)
    rows = df.dropna(subset=["launch_index"])
    engine = rows.groupby(rows["launch_index"].astype(int))["engine"].first().reindex(one.index).astype(object)
    per_node = one["start_s"] / parts
    warm = per_node.copy()
    for launches in engine.groupby(engine, dropna=False).groups.values():
        starts = per_node[launches]
        for launch in launches:
            warm[launch] = warm_start_s(float(starts[launch]), starts.drop(launch).to_numpy(dtype=float))
    return warm * parts + one["warmup_s"] + one["teardown_s"]


def warm_start_s(own_s: float, others_s: Sequence[float] | np.ndarray) -> float:
    """A launch's start at a warm node: its own, at most the median of its engine's other launches' starts.

    >>> warm_start_s(60.0, [8.0, 9.0]), warm_start_s(60.0, []), warm_start_s(8.0, [60.0])
    (8.5, 60.0, 8.0)
    """
    return min(own_s, float(np.median(others_s))) if len(others_s) else own_s


def rung_axis_of(df: pd.DataFrame) -> str:
    """The axis a halving sweep's rungs grew: as its rows recorded it (schema 7), else, for rows written before,
    the one whose value changes with the rung."""
    if "rung_axis" in df.columns and df["rung_axis"].notna().any():
        return str(df["rung_axis"].dropna().iloc[0])
    rungs = df[df["rung"].notna()]
    fraction_by_rung = rungs.groupby("rung")["fraction"].nunique().max() == 1 and rungs["fraction"].nunique() > 1
    return "fraction" if fraction_by_rung else RUNG_AXIS


def full_grid_estimate(df: pd.DataFrame, rung_axis: str | None = None) -> ClusterSeconds:
    """What the full grid would have cost: every launch started once, every pruned point measured too (a race's:
    the trials it did not take, :func:`_race_estimate_s`).

    ``rung_axis``: the axis halving's rungs grew (default: as the rows recorded it, :func:`rung_axis_of`).

    A pruned configuration's time at a rung it skipped is its median at its largest measured rung,
    times how much the configurations measured at both grew between the two (the rung ratio when
    none was); its trials are the median trial count of the points measured at that rung.
    """
    measured = df[df["status"].ne(PRUNED).fillna(True).astype(bool)]
    if measured.empty:
        return ClusterSeconds(0.0, 0.0, 0.0, 0.0)
    once = one_launch_s(measured).sum()
    measured_s = float(np.nansum(_floats(measured, "fit_wall_s") * np.nan_to_num(_floats(measured, "nodes"), nan=1)))
    halving = df[df["race_round"].isna().to_numpy()]
    return ClusterSeconds(
        float(once["start_s"]),
        float(once["warmup_s"]),
        measured_s + _pruned_estimate_s(halving, rung_axis or rung_axis_of(df)) + _race_estimate_s(df),
        float(once["teardown_s"]),
    )


def _race_estimate_s(df: pd.DataFrame) -> float:
    """Node-seconds of the trials a race did not take: a configuration that stopped at a point before its most
    trials (its ``pruned`` race row, whose ``trial`` is the trials it took) would have taken the rest at its median."""
    pruned = df[df["status"].eq(PRUNED).fillna(False).to_numpy() & df["race_round"].notna().to_numpy()]
    if pruned.empty:
        return 0.0
    keys = ["engine", "manager", *CONFIG, "nodes", *POINT]
    medians = df[df["status"].eq(OK).fillna(False).to_numpy()].groupby(keys, dropna=False)["fit_wall_s"].median()
    total = 0.0
    for _, row in pruned.iterrows():
        median_s = medians.get(tuple(row[key] for key in keys))
        left = float(row["race_max_trials"]) - float(row["trial"])
        if median_s is not None and not pd.isna(median_s) and left > 0:
            total += left * float(median_s) * (1.0 if pd.isna(row["nodes"]) else float(row["nodes"]))
    return total


def _pruned_estimate_s(df: pd.DataFrame, rung_axis: str) -> float:
    """Node-seconds the pruned (configuration, rung) points would have taken."""
    frame = pd.DataFrame(
        {
            "config": df.groupby(configuration_columns(rung_axis), dropna=False, sort=False).ngroup().to_numpy(),
            "rung": _floats(df, rung_axis),
            "fit": _floats(df, "fit_wall_s"),
            "nodes": np.nan_to_num(_floats(df, "nodes"), nan=1.0),
            "status": df["status"].astype(object).fillna("").to_numpy(),
        }
    )
    ok, pruned = frame[frame["status"] == OK], frame[frame["status"] == PRUNED]
    if pruned.empty or ok.empty:
        return 0.0
    medians = ok.groupby(["config", "rung"])["fit"].median().unstack("rung")
    trials = ok.groupby(["config", "rung"]).size().groupby("rung").median()
    total = 0.0
    for (config, rung), group in pruned.groupby(["config", "rung"]):
        known = medians.loc[config].dropna() if config in medians.index else pd.Series(dtype=float)
        below = known[known.index < rung]
        if below.empty:
            continue  # nothing measured below it: no base to estimate from
        base = below.index.max()
        both = medians[[base, rung]].dropna() if rung in medians.columns else pd.DataFrame()
        growth = float((both[rung] / both[base]).median()) if not both.empty else rung / base
        total += float(known[base]) * growth * float(trials.get(rung, len(group))) * float(group["nodes"].max())
    return total

"""What a sweep meant to measure and did not: configurations without an ok row at an epochs value, and why.

An answer that leaves them out would name a winner among the survivors: "Spark wins" when Dask's launch
failed. ``sweeper recommend`` (and the answer ``sweeper run`` ends with) names them instead, and gives no
Spark-vs-Dask verdict where one engine has nothing measured. Halving's pruned configurations were left
out on purpose and are not listed. A race's configuration that took fewer trials at a point than the race's
most with no decision (``pruned`` row) stopping it there is listed too (status ``unfinished``): a run stopped
before the race's rule was met, and its median there rests on fewer trials than the rule requires.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from sweeper.names import BASELINE_ENGINE, OK, PRUNED
from sweeper.results.right_sizing import ARM, as_int
from sweeper.results.statistics import config_label
from sweeper.search.accounting import POINT

UNFINISHED = "unfinished"  # a race's configuration short of the race's trials at a point, with no decision there


@dataclass(frozen=True)
class Unmeasured:
    """A configuration with no ok row at ``epochs``; ``status`` and ``reason`` of its latest row."""

    engine: str
    cores_per_executor: int
    executors: int
    executor_memory_gib: float
    epochs: tuple[int, ...]
    status: str
    reason: str

    @property
    def label(self) -> str:
        return f"{self.engine} {config_label(self.cores_per_executor, self.executors, self.executor_memory_gib)}"


def unmeasured(df: pd.DataFrame) -> list[Unmeasured]:
    """The configurations of ``df`` (not the baseline) with epochs values that have no ok row."""
    needed = [*ARM, "epochs", "status"]
    if df.empty or any(column not in df for column in needed):
        return []
    rows = df[df["engine"].ne(BASELINE_ENGINE).fillna(False) & df["status"].ne(PRUNED).fillna(False)]
    at = [rows[column] for column in (*ARM, "epochs")]
    ok_there = rows["status"].eq(OK).fillna(False).groupby(at, dropna=False, sort=False).transform("any")
    found = []
    for key, missing in rows[~(ok_there & rows["epochs"].notna())].groupby(list(ARM), dropna=False, sort=True):
        latest = missing.sort_values("started_at").iloc[-1] if "started_at" in missing else missing.iloc[-1]
        error = latest["error"] if "error" in missing and isinstance(latest["error"], str) else ""
        epochs = tuple(sorted(as_int(value) for value in set(missing["epochs"].dropna())))
        reason = error.strip().partition("\n")[0][:300]
        engine, cores, executors, memory_gib = key
        found.append(
            Unmeasured(
                str(engine), as_int(cores), as_int(executors), float(memory_gib), epochs, str(latest["status"]), reason
            )
        )
    return found + unfinished(df)


def unfinished(df: pd.DataFrame) -> list[Unmeasured]:
    """The race's configurations (not the baseline) with ok rows at a point where they took fewer trials (ok or
    not) than the race's most and no decision stopped them; one entry per configuration, its points' counts."""
    needed = [*ARM, "epochs", "status", "trial", "race_max_trials"]
    if df.empty or any(column not in df for column in needed):
        return []
    rows = df[df["race_max_trials"].notna().to_numpy() & df["engine"].ne(BASELINE_ENGINE).fillna(False).to_numpy()]
    point = [column for column in POINT if column in rows]
    short: dict[tuple[Any, ...], list[tuple[int, int, int]]] = {}
    for key, group in rows.groupby([*ARM, *point], dropna=False, sort=True):
        status = group["status"]
        if status.eq(PRUNED).any() or not status.eq(OK).any():
            continue  # a decision stopped it there, or nothing is ok (listed by unmeasured)
        taken, most = group["trial"].nunique(), as_int(group["race_max_trials"].max())
        if taken < most:
            at = as_int(key[len(ARM) + point.index("epochs")])
            short.setdefault(tuple(key[: len(ARM)]), []).append((at, taken, most))
    found = []
    for (engine, cores, executors, memory_gib), counts in short.items():
        counted = ", ".join(f"{taken} of {most} trials at {at} epochs" for at, taken, most in sorted(counts))
        reason = f"{counted}, and no decision of the race stopped it: the run stopped first; run the sweep again"
        epochs = tuple(sorted({at for at, _, _ in counts}))
        found.append(
            Unmeasured(str(engine), as_int(cores), as_int(executors), float(memory_gib), epochs, UNFINISHED, reason)
        )
    return found

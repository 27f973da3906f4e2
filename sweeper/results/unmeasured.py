"""What a sweep meant to measure and did not: configurations without an ok row at an epochs value, and why.

An answer that leaves them out would name a winner among the survivors: "Spark wins" when Dask's launch
failed. ``sweeper recommend`` (and the answer ``sweeper run`` ends with) names them instead, and gives no
Spark-vs-Dask verdict where one engine has nothing measured. Halving's pruned configurations were left
out on purpose and are not listed.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from sweeper.names import BASELINE_ENGINE, OK, PRUNED
from sweeper.results.right_sizing import ARM, as_int
from sweeper.results.statistics import config_label


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
    found = []
    for key, group in rows.groupby(list(ARM), dropna=False, sort=True):
        ok_epochs = set(group.loc[group["status"].eq(OK).fillna(False), "epochs"].dropna())
        missing = group[~group["epochs"].isin(ok_epochs)]
        if missing.empty:
            continue
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
    return found

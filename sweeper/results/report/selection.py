"""Which configurations a figure drawn per configuration shows, and in what order: each engine's fastest few, the
others counted; the one order of shapes (and of engines) every panel and every figure draws them in.

A figure with a box, a line or a label per configuration is readable for a handful of them and neither
readable nor quick to draw for a thousand. So such figures draw each engine's :data:`FIGURE_CONFIGURATIONS`
fastest configurations (by median time) and say how many they leave out; the tables keep every one. A store
with no more configurations than that draws them all, as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from sweeper.engines import figure_order
from sweeper.names import BASELINE_ENGINE, CONFIG

FIGURE_CONFIGURATIONS = 8  # per engine; with two engines and the baseline, 17 configurations at most


def fastest(
    table: pd.DataFrame,
    limit: int = FIGURE_CONFIGURATIONS,
    within: Sequence[str] = ("epochs",),
    scope: Sequence[str] = (),
    config: Sequence[str] = CONFIG,
    time: str = "median_s",
) -> np.ndarray:
    """A mask of ``table``'s rows: those of each engine's ``limit`` fastest configurations.

    A row's rank is its ``time`` among its engine's rows of the same ``within`` values (1 = fastest, missing
    times last); a configuration's score is the mean rank of its rows; each engine keeps, per ``scope`` values,
    the ``limit`` configurations with the lowest score (ties in the order of ``config``). ``O(n log n)``.

    >>> t = pd.DataFrame({"engine": ["a"] * 3 + ["b"], "config": ["x", "y", "z", "x"], "median_s": [3, 1, 2, 9]})
    >>> fastest(t, limit=2, within=(), config=("config",)).tolist()
    [False, True, True, True]
    """
    if table.empty:
        return np.zeros(0, dtype=bool)
    frame = table.reset_index(drop=True)
    groups = ["engine", *scope]
    key = list(dict.fromkeys([*groups, *config]))
    rank = frame.groupby(["engine", *within], dropna=False, sort=False)[time].rank(method="first", na_option="bottom")
    scores = frame[key].assign(_score=rank.to_numpy(dtype=float))
    configurations = scores.groupby(key, dropna=False, sort=True, as_index=False)["_score"].mean()
    configurations = configurations.sort_values([*groups, "_score"], kind="stable")
    configurations["_place"] = configurations.groupby(groups, dropna=False, sort=False).cumcount()
    place = frame[key].merge(configurations, on=key, how="left")["_place"]
    return (place < limit).to_numpy(dtype=bool)


def configurations(table: pd.DataFrame, config: Sequence[str] = CONFIG) -> int:
    """How many configurations (engine and shape) ``table`` holds."""
    return len(table.drop_duplicates(["engine", *config])) if len(table) else 0


def left_out_note(
    total: int,
    drawn: int,
    shown: str = "drawn",
    others: str = "left out",
    where: str = "every one in the tables",
    limit: int = FIGURE_CONFIGURATIONS,
) -> str:
    """What a figure showing ``drawn`` of ``total`` configurations says of the others ("" when it shows all).

    >>> print(left_out_note(1000, 16))
    each engine's 8 fastest configurations drawn; 984 of 1,000 left out, every one in the tables
    >>> left_out_note(6, 6)
    ''
    """
    if drawn >= total:
        return ""
    return f"each engine's {limit} fastest configurations {shown}; {total - drawn:,} of {total:,} {others}, {where}"


def with_note(text: str, note: str, separator: str = " ") -> str:
    r"""A figure's caption or title with its note in parentheses (as it was without one); a title's on its own line.

    >>> with_note("Time per configuration", ""), with_note("Time", "3 left out"), with_note("Time", "3", "\n")
    ('Time per configuration', 'Time (3 left out)', 'Time\n(3)')
    """
    return f"{text}{separator}({note})" if note else text


def engine_order(engines: Iterable[str]) -> list[str]:
    """The engines in their descriptors' order (:func:`sweeper.engines.figure_order`), the baseline left out.

    >>> engine_order(["dask", "local", "ray", "spark"])
    ['spark', 'dask', 'ray']
    """
    return figure_order(engines)


def shape_order(table: pd.DataFrame, label: str) -> list[str]:
    """The ``label`` values of ``table``'s configurations in the order every figure draws them.

    The baseline first (an ``engine`` column says which rows are), then fewer cores in all, fewer executors,
    less memory; a label seen twice keeps its first place.

    >>> t = pd.DataFrame({"engine": ["dask", "spark", "local"], "cores_per_executor": [1, 2, 1],
    ...                   "executors": [2, 1, 1], "executor_memory_gib": [2.0, 6.0, 0.0], "shape": ["b", "a", "t"]})
    >>> shape_order(t, "shape")
    ['t', 'a', 'b']
    """
    numbers = table[list(CONFIG)].astype("float64").fillna(-1.0)
    baseline = table["engine"].eq(BASELINE_ENGINE).fillna(False) if "engine" in table else False
    keys = pd.DataFrame(
        {
            "_cluster": ~pd.Series(baseline, index=table.index).astype(bool),
            "_cores": numbers["cores_per_executor"] * numbers["executors"],
            "_executors": numbers["executors"],
            "_memory": numbers["executor_memory_gib"],
            "_label": table[label].astype(str),
        }
    )
    ordered = keys.sort_values(["_cluster", "_cores", "_executors", "_memory", "_label"], kind="stable")
    return list(dict.fromkeys(ordered["_label"]))

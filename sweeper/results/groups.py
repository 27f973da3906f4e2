"""Groups of rows as arrays: one pass of pandas' groupby, then plain indexing (no per-group DataFrame).

A per-group ``for key, group in frame.groupby(...)`` costs a millisecond or more a group, whatever its size;
a store of 10^4 configurations then takes minutes. These helpers number the groups once and hand back
positions and first rows, so per-group work is on numpy arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd


def group_ids(rows: pd.DataFrame, keys: Sequence[str]) -> np.ndarray:
    """Each row's group of ``keys``: groups numbered in sorted key order, NA a group of its own."""
    return rows.groupby(list(keys), dropna=False, sort=True).ngroup().to_numpy()


def first_rows(rows: pd.DataFrame, ids: np.ndarray) -> list[dict[str, Any]]:
    """Each group's first row (in group order) as a dict of column values."""
    first_of = np.full(int(ids.max()) + 1 if ids.size else 0, -1)
    first_of[ids[::-1]] = np.arange(ids.size)[::-1]  # the smallest position of each group is written last
    return rows.iloc[first_of].to_dict("records")


def members(ids: np.ndarray) -> list[np.ndarray]:
    """Each group's row positions (in group order; rows in their order within a group)."""
    order = np.argsort(ids, kind="stable")
    bounds = np.flatnonzero(np.diff(ids[order])) + 1
    return np.split(order, bounds) if ids.size else []

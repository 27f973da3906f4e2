"""The run-to-run spread of log times, pooled over configurations: what racing, halving's rank check and auto's
simulated continuations compare with."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np


def pooled_log_sd(logs: Iterable[np.ndarray]) -> tuple[float, int]:
    """The standard deviation of log times around each configuration's own mean, pooled, and its degrees of
    freedom (NaN and 0 where no configuration has two values).

    >>> sd, df = pooled_log_sd([np.log([10.0, 10.0 * math.e]), np.log([5.0])])
    >>> round(sd, 3), df
    (0.707, 1)
    """
    values = [np.asarray(v, dtype=float) for v in logs]
    df = sum(v.size - 1 for v in values if v.size)
    if df < 1:
        return math.nan, 0
    return math.sqrt(sum(float(((v - v.mean()) ** 2).sum()) for v in values if v.size) / df), df

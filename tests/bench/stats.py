"""The bench's arithmetic: ratios, medians, slopes, the engines' turn order, bytes per fit."""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def ratio(value: float | None, reference: float | None) -> float | None:
    """``value / reference``, or None when either is missing or the reference is not positive.

    >>> ratio(11.0, 10.0)
    1.1
    >>> ratio(1.0, 0.0) is None
    True
    """
    if value is None or reference is None or reference <= 0:
        return None
    return value / reference


def median(values: Sequence[float]) -> float | None:
    """The median, None for no values."""
    return statistics.median(values) if values else None


def slope(values: Sequence[float]) -> float | None:
    """Least-squares slope of ``values`` against their index (per step); None for fewer than 2 values.

    >>> slope([1.0, 2.0, 3.0])
    1.0
    """
    n = len(values)
    if n < 2:
        return None
    mean_x = (n - 1) / 2
    mean_y = sum(values) / n
    numerator = sum((i - mean_x) * (y - mean_y) for i, y in enumerate(values))
    denominator = sum((i - mean_x) ** 2 for i in range(n))
    return numerator / denominator


def robust_slope(values: Sequence[float]) -> float | None:
    """Theil-Sen slope (median of all pairwise slopes) per step: a steady leak shows, one allocator jump does not.

    >>> robust_slope([10.0, 10.0, 40.0, 10.0, 10.0])
    0.0
    >>> robust_slope([1.0, 2.0, 3.0, 4.0])
    1.0
    """
    pairs = [(values[j] - values[i]) / (j - i) for i in range(len(values)) for j in range(i + 1, len(values))]
    return statistics.median(pairs) if pairs else None


def turns(engines: Sequence[str], repetition: int, last: str) -> tuple[str, ...]:
    """The engine order of one repetition: ``last`` always last, the others rotated by one each time.

    PySpark stops a Python worker idle for 60 s (``PythonWorkerFactory``, not configurable). Rotating all three
    engines leaves one of them four other batches (~80 s) between two of its own every third repetition; Spark's
    workers were then new in that batch (scikit-learn imported, the broadcast read again: ~2 s outside the fits),
    which a sweep's back-to-back batches never see. With Spark last, two other batches run between its own.

    >>> turns(("loky", "dask", "spark"), 1, last="spark")
    ('dask', 'loky', 'spark')
    """
    others = [engine for engine in engines if engine != last]
    shift = repetition % len(others)
    return (*others[shift:], *others[:shift], last)


def bytes_per_fit(nbytes: int, receivers: int, fits: int) -> float | None:
    """Bytes of training data shipped per fit: each receiving process got ``nbytes`` once, over ``fits`` fits."""
    return nbytes * receivers / fits if fits > 0 else None

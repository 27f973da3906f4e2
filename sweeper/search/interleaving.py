"""Randomized multiple interleaved trials (RMIT, Abedi and Brecht, ICPE 2017): the order of a round's visits.

A sweep measures in rounds: each round visits every configuration (launch) that has measurements in it once. With a
fixed order a machine that drifts during the sweep (another tenant starting, a cache warming, the node heating up)
always meets the same configuration first; RMIT visits them in a random order drawn afresh for every round, so drift
becomes noise spread over all configurations instead of a bias on some. The order is drawn from the grid's
``workload.seed`` and the round, so the same grid visits in the same order every time it runs (and a resumed run in
the order the stopped one would have taken).

A launch takes its points (work-axis values, trials) in a random order too, drawn for the round and the launch (and,
for a fixed list taken in rounds of trials, the trial): a point measured first in one round is not measured first
in every round.

Each item is ranked by a random key drawn for its number (its position in the whole: a launch's index, a point's place
in its launch's list): the order of a subset is the order those items have in the whole round, so what a resumed run
has left is taken in the order the stopped run would have taken it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

import numpy as np

T = TypeVar("T")

ORDER_STREAM = 0x524D4954  # "RMIT": the seed's stream for visit orders, apart from the fits' and the split's
POINTS = 0x50  # "P": a launch's order of points, apart from the round's order of launches


def in_random_order(items: Iterable[T], number: Callable[[T], int], seed: int, *stream: int) -> list[T]:
    """``items`` in the random order of ``seed`` and ``stream`` (the round), each ranked by the key drawn for
    ``number(item)`` (a non-negative number, unique among the items)."""
    listed = list(items)
    if len(listed) < 2:
        return listed
    keys = np.random.default_rng([seed, ORDER_STREAM, *stream]).random(max(number(item) for item in listed) + 1)
    return sorted(listed, key=lambda item: float(keys[number(item)]))

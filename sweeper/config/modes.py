"""One descriptor per mode (how one measurement's batch is made), registered in one place.

What a mode's batch holds is declared, not written as a branch: ``planning/plan.py`` counts a batch's fits and
``workload/tasks.py`` makes its tasks from the same :class:`Mode`, so a new mode is one line of :data:`MODES`
(and its name in ``names.MODES``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sweeper.config.grid import Workload
from sweeper.names import CV, DATA_PARALLEL, REPLICAS, SEARCH_MODE


@dataclass(frozen=True)
class Mode:
    """A mode's batch: ``replicas`` fits of its own seed each (``n_fits`` of them), on each fold's rows (``folds``),
    for each parameter combination of ``param_grid`` (``combinations``); or ``one_model``: ONE model trained
    across the launch's shards (parameter averaging, or Spark ML's own)."""

    name: str
    replicas: bool = False
    folds: bool = False
    combinations: bool = False
    one_model: bool = False

    def fits(self, workload: Workload, n_fits: int) -> int:
        """The fits of one batch of this mode (a one-model batch: 1)."""
        if self.one_model:
            return 1
        combinations = math.prod(len(values) for _, values in workload.param_grid) if self.combinations else 1
        return (n_fits if self.replicas else 1) * (workload.folds if self.folds else 1) * combinations


BY_NAME = {
    mode.name: mode
    for mode in (
        Mode(REPLICAS, replicas=True),
        Mode(CV, folds=True),
        Mode(SEARCH_MODE, folds=True, combinations=True),
        Mode(DATA_PARALLEL, one_model=True),
    )
}


def mode(name: str) -> Mode:
    """The descriptor of mode ``name``.

    >>> from sweeper.names import MODES
    >>> mode("search").folds, mode("replicas").folds, tuple(BY_NAME) == MODES  # one per mode, in its order
    (True, False, True)
    """
    return BY_NAME[name]

"""Grid defaults a machine's environment may change: ``SWEEPER_INTERFERENCE_LIMIT``.

On a machine known to be shared (a CI runner, a laptop that also builds), a user may set the default of
``workload.interference_limit`` for every grid there instead of in each file; a grid that sets the key keeps its
own value. The rows still record every reading, so what was judged is never hidden.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
from typing import Any

from sweeper.config.grid import Grid
from sweeper.errors import UserError

INTERFERENCE_LIMIT_VARIABLE = "SWEEPER_INTERFERENCE_LIMIT"


def with_environment_defaults(grid: Grid, raw: dict[str, Any]) -> Grid:
    """``grid`` with the defaults its environment sets for the keys its file (``raw``) leaves out."""
    text = os.environ.get(INTERFERENCE_LIMIT_VARIABLE)
    workload = raw.get("workload")
    if text is None or (isinstance(workload, dict) and "interference_limit" in workload):
        return grid
    try:
        limit = float(text)
    except ValueError:
        limit = math.nan
    if not 0 < limit <= 100:
        raise UserError(f"{INTERFERENCE_LIMIT_VARIABLE}={text!r}: a number in (0, 100] (workload.interference_limit)")
    return replace(grid, workload=replace(grid.workload, interference_limit=limit))

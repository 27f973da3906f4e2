"""For tests that time a fault by the order a sweep takes its measurements: a grid seed that visits in plan order.

A run visits its launches, and a launch its points, in a random order drawn from ``workload.seed``
(:mod:`sweeper.search.interleaving`). A test that stops or kills a sweep inside "the batch after the launch's first
row" or "the launch after the Spark launch" reads that order from the plan; :func:`seed_in_plan_order` gives its grid
the smallest seed whose draw is the plan's own order (launches by index, each launch's trials in rounds, in every
round its points as the plan lists them: a launch draws its points' order too), so the test's timing holds and says
why. Only fixed trials (one pass) are searched: the faults are timed on such grids.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import yaml

from sweeper.config import load as grid_file
from sweeper.planning.measurements import pending
from sweeper.planning.plan import make_plan
from sweeper.run.trials import one_round

MAX_SEEDS = 10_000


def seed_in_plan_order(path: Path) -> Path:
    """Set the grid file's ``workload.seed`` to the smallest whose visiting order is the plan's; the path."""
    plan = make_plan(grid_file.load(path))
    todo, _ = pending(plan, set())
    positions = {(index, point): n for index, points in plan.points.items() for n, point in enumerate(points)}
    planned = sorted(todo, key=lambda t: (t.launch.index, t.trial, positions[(t.launch.index, t.point)]))
    for seed in range(MAX_SEEDS):
        seeded = replace(plan, grid=replace(plan.grid, workload=replace(plan.grid.workload, seed=seed)))
        if [item.key for _, items in one_round(seeded, todo) for item in items] == [item.key for item in planned]:
            spec = yaml.safe_load(path.read_text())
            spec["workload"]["seed"] = seed
            path.write_text(yaml.safe_dump(spec, sort_keys=False))
            return path
    raise AssertionError(f"{path}: no seed below {MAX_SEEDS} visits in plan order")

"""``--dry-run``: the same launches in the same order, shrunk to fit this machine."""

from __future__ import annotations

import os
from dataclasses import replace

import psutil

from sweeper.config.grid import Search
from sweeper.config.managers import LOCAL
from sweeper.config.names import MAX_NAME_CHARS
from sweeper.names import BASELINE_ENGINE
from sweeper.planning.plan import Launch, Plan, batch_size
from sweeper.units import MIB_PER_GIB

MAX_EPOCHS = 20
SWEEP_SUFFIX = "-dry-run"  # a dry run writes to a sweep of its own: NAME-dry-run
MAX_TRAIN_ROWS = 2000
# share of this machine's memory that all workers of one launch may take together
MEMORY_SHARE = 0.5


def shrink_launch(launch: Launch, local_cores: int, local_memory_mib: int) -> Launch:
    """Fit a launch into ``local_cores`` cores and a share of the local memory.

    >>> from sweeper.planning.plan import Launch
    >>> big = Launch(1, "spark", "yarn", 2, "report", 5, 7, 13 * 1024, 2048, (3, 4))
    >>> small = shrink_launch(big, local_cores=2, local_memory_mib=24 * 1024)
    >>> (small.manager, small.executors, small.cores_per_executor, small.executor_memory_mib, small.dry_run)
    ('local', 1, 2, 12288, True)
    >>> small.as_planned is big
    True
    """
    if launch.engine == BASELINE_ENGINE:
        return replace(launch, dry_run=True, planned=launch)
    cores = min(launch.cores_per_executor, local_cores)
    executors = max(1, min(launch.executors, local_cores // cores))
    budget_gib = int(local_memory_mib * MEMORY_SHARE) // executors // MIB_PER_GIB
    memory_mib = max(MIB_PER_GIB, min(launch.executor_memory_mib, budget_gib * MIB_PER_GIB))
    return replace(
        launch,
        manager=LOCAL,
        nodes=1,
        cores_per_executor=cores,
        executors=executors,
        executor_memory_mib=memory_mib,
        workers_per_node=(executors,),
        dry_run=True,
        planned=launch,
    )


def _dry_run_sweep(name: str) -> str:
    """The sweep a dry run of sweep ``name`` writes to (never the real sweep's).

    >>> _dry_run_sweep("2node"), len(_dry_run_sweep("x" * MAX_NAME_CHARS))
    ('2node-dry-run', 100)
    """
    return name[: MAX_NAME_CHARS - len(SWEEP_SUFFIX)] + SWEEP_SUFFIX


def shrink_plan(plan: Plan) -> Plan:
    """The plan as a local dry-run: launches shrunk, fits per batch recomputed for them.

    A dry run previews the whole grid with a fixed number of trials: adaptive trials take their
    ``min``, and ``search: halving`` measures every configuration (times here decide nothing).
    Its rows go to a sweep of their own (:func:`_dry_run_sweep`), apart from the real sweep's.
    """
    local_cores = os.cpu_count() or 1
    local_memory_mib = psutil.virtual_memory().total // (1024 * 1024)
    launches = tuple(shrink_launch(launch, local_cores, local_memory_mib) for launch in plan.launches)
    workload = plan.grid.workload
    trials = workload.adaptive.min_trials if workload.adaptive else workload.trials
    grid = replace(
        plan.grid,
        name=_dry_run_sweep(plan.grid.name),
        workload=replace(workload, trials=trials, adaptive=None),
        search=Search(),
    )
    return replace(
        plan,
        grid=grid,
        launches=launches,
        n_fits=batch_size(plan.grid, list(launches)),
        epochs_cap=MAX_EPOCHS,
        max_train_rows=MAX_TRAIN_ROWS,
    )

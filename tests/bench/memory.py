"""The driver's memory over consecutive launches: RSS, open files, threads, Dask schedulers left alive."""

from __future__ import annotations

import dataclasses
import gc
import time
from pathlib import Path
from typing import Any

from sweeper.workload.data import Data
from sweeper.workload.tasks import FitTask
from tests.bench.machine import _rss_mib
from tests.bench.settings import launch_grid
from tests.bench.shipping import data_nbytes
from tests.bench.stats import median, robust_slope, slope
from tests.bench.text import _size, log

MEMORY_WARMUP_LAUNCHES = 3  # launches left out of the RSS slope: first-use caches and imports


def memory_over_launches(
    engine: str, launches: int, data: Data, run_dir: Path, threads_per_fit: int = 1
) -> dict[str, Any]:
    """The driver's RSS after each of ``launches`` consecutive launches of 1 worker x 2 cores with a 2-fit batch."""
    import psutil

    from sweeper.config import load as grids
    from sweeper.launch.registry import starter
    from sweeper.planning.plan import make_plan
    from sweeper.workload.environment import fit_environment
    from tests.support.launches import context as launch_context

    raw = launch_grid("digits", 1, 2, 1)
    # One worker process of 2 threads: a 1 x 1 launch would make joblib run the fits in the driver (n_jobs=1).
    raw["sizing"]["cores_per_executor"] = [2]
    plan = make_plan(grids.parse(raw, Path("<bench-memory>")))
    launch = next(launch for launch in plan.launches if launch.engine == engine)
    context = launch_context(run_dir, environment=fit_environment(threads_per_fit, {}))
    tasks = [
        FitTask(params=(("hidden_layer_sizes", (100, 50)),), epochs=1, seed=i, exact_epochs=True, threads_per_fit=1)
        for i in range(2)
    ]
    me = psutil.Process()
    rss, durations, fds, threads = [], [], [], []
    for index in range(launches):
        started = time.perf_counter()
        with starter(engine, "local")(dataclasses.replace(launch, index=100 + index), context) as session:
            session.run_batch(tasks, data)
        del session
        durations.append(time.perf_counter() - started)
        gc.collect()
        rss.append(_rss_mib())
        fds.append(me.num_fds())
        threads.append(me.num_threads())
        log(f"{engine} launch {index + 1}/{launches}: {durations[-1]:.1f} s, RSS {rss[-1]:.1f} MiB")
    skip = MEMORY_WARMUP_LAUNCHES if launches > MEMORY_WARMUP_LAUNCHES + 2 else 0
    leftovers = None
    if engine == "dask":
        from distributed import Scheduler

        gc.collect()
        leftovers = sum(1 for o in gc.get_objects() if isinstance(o, Scheduler))
    return {
        "launch": launch.label,
        "batch": f"2 fits x 1 epoch, {data.n_train} training rows, data {_size(data_nbytes(data))}",
        "rss_mib": rss,
        "slope_from": skip + 1,
        "slope_mib": robust_slope(rss[skip:]),
        "least_squares_slope_mib": slope(rss[skip:]),
        "live_schedulers_after": leftovers,
        "growth_mib": rss[-1] - rss[skip] if rss else None,
        "fds": f"{fds[0]} -> {fds[-1]}" if fds else "-",
        "threads": f"{threads[0]} -> {threads[-1]}" if threads else "-",
        "launch_median_s": median(durations),
    }

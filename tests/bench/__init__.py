"""``make bench``: the sweeper's launches against plain joblib/loky, and its planning, store and memory costs.

Run as ``python -m tests.bench [--quick]``. One run measures, side by side on the same batch of fits:

- **loky**: ``joblib.Parallel(n_jobs=2)`` with joblib's default backend over the same ``FitTask``s and
  the same ``Data`` (the peer to beat on one machine);
- **dask** and **spark**: the sweeper's local launches of 2 x 1 core, planned from an in-memory grid and
  started with :func:`sweeper.launch.registry.starter`, data shipped once per launch.

All three run in the same controlled fit environment, are up at the same time, and take turns batch by batch
(loky and Dask swap turns each repetition, Spark goes last) so a noisy machine does not favour one. It also
times planning a ~10,000-measurement grid, loading a 100,000-row store and the analysis commands
(``recommend``, ``predict --validate``, ``replay`` race and halving, ``report``) on a 1,000-configuration
store, and follows the driver's memory over 20 consecutive Dask launches (and a few Spark launches), and
runs a local sweep whose interference marks it holds against the machine's load measured beside it (false
marks, ``quiet``). It writes ``BENCHMARKS.md`` and ``bench.json``; the pure pieces (targets, ratios, the
markdown) are unit-tested in tests/test_bench.py.

The package, a module a job: ``settings`` (sizes and grids), ``stats`` (arithmetic), ``machine`` (machine
facts, CPU and memory accounting), ``engine_run``, ``loky``, ``shipping`` and ``batches`` (the batch
comparison), ``costs`` (planning and store), ``analysis`` (the commands on a large store), ``memory`` (driver
memory over launches), ``quiet`` (interference marks against the machine's load), ``targets`` (targets and
findings), ``render`` (BENCHMARKS.md and bench.json), ``text``
(formatting, progress) and ``cli`` (the run and ``main``). Their public names are importable from
``tests.bench`` as before the split."""

from __future__ import annotations

from tests.bench.batches import ENGINES, compare_engines, profile_batches
from tests.bench.cli import load_data, main, run
from tests.bench.costs import synthetic_rows, time_planning, time_store
from tests.bench.engine_run import EngineRun
from tests.bench.loky import LokySession, loky_started
from tests.bench.machine import (
    CPU_PARTS,
    FOREIGN,
    cpu_by_part,
    cpu_snapshot,
    machine_busy_s,
    machine_cores,
    machine_facts,
)
from tests.bench.memory import MEMORY_WARMUP_LAUNCHES, memory_over_launches
from tests.bench.render import render_markdown, write_outputs
from tests.bench.settings import QUICK, Settings, launch_grid, plan_grid
from tests.bench.shipping import LOKY_MAX_NBYTES, dask_shipping, data_nbytes, loky_shipping, spark_shipping
from tests.bench.stats import bytes_per_fit, median, ratio, robust_slope, slope, turns
from tests.bench.targets import (
    BUSY_LIMIT,
    FULL_LAUNCHES,
    MIN_FIT_S,
    MIN_FITS,
    TARGETS,
    Check,
    diagnose,
    evaluate,
    machine_busy_share,
)
from tests.bench.text import MIB, log

__all__ = [
    "BUSY_LIMIT",
    "CPU_PARTS",
    "ENGINES",
    "FOREIGN",
    "FULL_LAUNCHES",
    "LOKY_MAX_NBYTES",
    "MEMORY_WARMUP_LAUNCHES",
    "MIB",
    "MIN_FITS",
    "MIN_FIT_S",
    "QUICK",
    "TARGETS",
    "Check",
    "EngineRun",
    "LokySession",
    "Settings",
    "bytes_per_fit",
    "compare_engines",
    "cpu_by_part",
    "cpu_snapshot",
    "dask_shipping",
    "data_nbytes",
    "diagnose",
    "evaluate",
    "launch_grid",
    "load_data",
    "log",
    "loky_shipping",
    "loky_started",
    "machine_busy_s",
    "machine_busy_share",
    "machine_cores",
    "machine_facts",
    "main",
    "median",
    "memory_over_launches",
    "plan_grid",
    "profile_batches",
    "ratio",
    "render_markdown",
    "robust_slope",
    "run",
    "slope",
    "spark_shipping",
    "synthetic_rows",
    "time_planning",
    "time_store",
    "turns",
    "write_outputs",
]

"""The batch comparison: loky, Dask and Spark up together, taking turns batch by batch; optional profiles."""

from __future__ import annotations

import cProfile
import io
import pstats
import time
from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from sweeper.launch.base import LaunchContext
from sweeper.planning.plan import Launch
from sweeper.workload.data import Data
from sweeper.workload.fit import FitResult
from sweeper.workload.tasks import FitTask
from tests.bench.engine_run import EngineRun
from tests.bench.loky import _shutdown_loky, loky_started
from tests.bench.machine import FOREIGN, cpu_by_part, cpu_snapshot, machine_busy_s, machine_cores
from tests.bench.settings import Settings, launch_grid
from tests.bench.shipping import _dask_key, _spark_broadcast, dask_shipping, loky_shipping, spark_shipping
from tests.bench.stats import turns
from tests.bench.text import log

ENGINES = ("loky", "dask", "spark")


def slot_busy_s(results: list[FitResult]) -> list[float]:
    """Each worker process's fits of a batch, summed: a slot's busy time (one process a slot, one fit at a time)."""
    busy: dict[int, float] = {}
    for result in results:
        busy[result.pid] = busy.get(result.pid, 0.0) + result.fit_s
    return list(busy.values())


def _record(run: EngineRun, results: list[FitResult]) -> None:
    run.pids.update(r.pid for r in results)
    run.fits_run += len(results)
    if results and not run.environment:
        run.environment = dict(results[0].environment)


def spark_classes_written(launch: Launch, context: LaunchContext) -> str:
    """Spark's class archive made where this machine has none yet, so that the start timed is a later launch's (as
    every start of a user's but the first); what the timed launch's JVMs load their classes from, as a note.

    A machine's first Spark launch starts without the archive, which its driver writes at its end
    (:mod:`sweeper.launch.spark.class_archive`): that launch is started and stopped here first, its start said."""
    from sweeper.launch.registry import starter
    from sweeper.launch.spark.class_archive import class_archive

    archive = class_archive()
    if archive is None:
        return "its JVMs load Spark's classes from the jars (no class archive for this Java)"
    if archive.path.exists():
        return "its JVMs mapped Spark's class archive (sweeper.launch.spark.class_archive)"
    log("no Spark class archive here yet: a first launch writes it")
    started = time.perf_counter()
    with starter("spark", "local")(launch, context):
        first_s = time.perf_counter() - started
    if not archive.path.exists():
        return f"its JVMs load Spark's classes from the jars (a first launch, {first_s:.2f} s, wrote no class archive)"
    return (
        "its JVMs mapped Spark's class archive, which a first launch on this machine wrote at its end just before "
        f"(that launch started in {first_s:.2f} s without it)"
    )


def compare_engines(
    settings: Settings, data: Data, dataset: str, run_dir: Path, profile_dir: Path | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The batch comparison: loky, Dask and Spark up together, taking turns batch by batch."""
    from sweeper.config import load as grids
    from sweeper.launch.registry import starter
    from sweeper.planning.plan import make_plan
    from sweeper.run.measure import batch_for
    from sweeper.workload.environment import fit_environment
    from tests.support.launches import context as launch_context

    raw = launch_grid(dataset, settings.epochs, settings.fits, settings.repeats)
    plan = make_plan(grids.parse(raw, Path("<bench>")))
    launches = {launch.engine: launch for launch in plan.launches}
    workload = plan.grid.workload
    context = launch_context(
        run_dir,
        environment=fit_environment(workload.threads_per_fit, dict(plan.grid.environment)),
        threads_per_fit=workload.threads_per_fit,
    )
    slots = launches["dask"].total_cores // workload.threads_per_fit

    def batch(trial: int, epochs: int) -> list[FitTask]:
        # One batch for every engine: the first launch's point (replicas, so the launch's shards play no part).
        return batch_for(plan, plan.launches[0], plan.points[0][0], trial, data, epochs=epochs)

    runs = {
        "loky": EngineRun("loky", f"joblib.Parallel(n_jobs={slots}), loky"),
        "dask": EngineRun("dask", launches["dask"].label),
        "spark": EngineRun("spark", launches["spark"].label),
    }
    sessions: dict[str, Any] = {}
    marks: dict[str, Any] = {}
    with ExitStack() as stack:
        # loky first: its workers then predate the engines' process tracking, which reaps what a launch started.
        log("starting loky workers")
        sessions["loky"] = stack.enter_context(loky_started(slots, data, runs["loky"]))
        runs["spark"].start_note = spark_classes_written(launches["spark"], context)
        for name in ("dask", "spark"):
            log(f"starting {launches[name].label}")
            started = time.perf_counter()
            sessions[name] = stack.enter_context(starter(name, "local")(launches[name], context))
            runs[name].start_s = time.perf_counter() - started
        stack.callback(_shutdown_loky)  # runs first on exit, before the launches reap their children
        warmup = batch(trial=0, epochs=1)
        for name in ENGINES:
            started = time.perf_counter()
            _record(runs[name], sessions[name].run_batch(warmup, data))
            runs[name].warmup_s = time.perf_counter() - started
            log(f"{name} warm-up {runs[name].warmup_s:.2f} s")
        marks["dask"] = _dask_key(sessions["dask"])
        marks["spark"] = _spark_broadcast(sessions["spark"])
        for repetition in range(settings.repeats):
            tasks = batch(trial=repetition + 1, epochs=settings.epochs)
            for name in turns(ENGINES, repetition, last="spark"):
                cpu_before, busy_before = cpu_snapshot(), machine_busy_s()
                started = time.perf_counter()
                results = sessions[name].run_batch(tasks, data)
                wall = time.perf_counter() - started
                parts = cpu_by_part(cpu_before, cpu_snapshot(), {r.pid for r in results})
                parts[FOREIGN] = max(0.0, machine_busy_s() - busy_before - sum(parts.values()))
                runs[name].cpu_s.append(parts)
                runs[name].batches_s.append(wall)
                runs[name].fit_s.append([r.fit_s for r in results])
                runs[name].slot_s.append(slot_busy_s(results))
                runs[name].measuring_s.append(driver_measuring_s(name, sessions[name], results, wall, slots))
                runs[name].interference_s.append(driver_interference_s(results))
                _record(runs[name], results)
                log(f"repetition {repetition + 1}/{settings.repeats} {name}: {wall:.2f} s")
        if profile_dir is not None:
            profile_batches(sessions, batch(trial=settings.repeats + 1, epochs=settings.epochs), data, profile_dir)
        runs["dask"].shipping = dask_shipping(sessions["dask"], data, runs["dask"], marks["dask"])
        runs["spark"].shipping = spark_shipping(sessions["spark"], data, runs["spark"], marks["spark"])
        runs["loky"].shipping = loky_shipping(data, runs["loky"], 1 + settings.repeats)
        log("tearing down")
    batch_info = {
        "fits": plan.n_fits,
        "epochs": settings.epochs,
        "repeats": settings.repeats,
        "model": "(hidden_layer_sizes=(100, 50), solver='adam')",
        "threads_per_fit": workload.threads_per_fit,
        "slots": slots,
        "machine_cores": machine_cores(),
        "probe_s": probe_s(),
        "machine_probe_s": machine_probe_s(),
    }
    return batch_info, {name: run.summary(slots) for name, run in runs.items()}


def driver_measuring_s(name: str, session: Any, results: list[FitResult], wall_s: float, slots: int) -> float:
    """What the runner adds to a batch for its resource figures: Spark's heap peak, the row's columns."""
    from sweeper.run.resources import resource_columns

    started = time.perf_counter()
    heap = session.jvm_peak_heap_gib() if name != "loky" else None
    resource_columns(results, wall_s, slots, spark=name == "spark", jvm_peak_heap_gib=heap)
    return time.perf_counter() - started


def driver_interference_s(results: list[FitResult]) -> float:
    """What the runner adds to a batch to read interference: its process tree's CPU before and after, the
    columns from the fits' readings (:mod:`sweeper.run.interference`)."""
    from sweeper.config.grid import INTERFERENCE_LIMIT
    from sweeper.run.interference import interference_columns, process_tree_cpu_s

    started = time.perf_counter()
    before = process_tree_cpu_s()
    usages = [r.usage for r in results if r.usage is not None]
    interference_columns(usages, 1, INTERFERENCE_LIMIT, process_tree_cpu_s() - before)  # its cost: not the cores
    return time.perf_counter() - started


def machine_probe_s(repeats: int = 2000) -> float:
    """Seconds one fit spends reading its machine's CPU counters (before and after: two readings)."""
    from sweeper.workload.usage import machine_reading

    started = time.perf_counter()
    for _ in range(repeats):
        machine_reading()
        machine_reading()
    return (time.perf_counter() - started) / repeats


def probe_s(repeats: int = 2000) -> float:
    """Seconds one fit spends measuring itself (:func:`sweeper.workload.usage.measured` around an empty block)."""
    from sweeper.workload.usage import measured

    started = time.perf_counter()
    for _ in range(repeats):
        with measured():
            pass
    return (time.perf_counter() - started) / repeats


def profile_batches(sessions: Mapping[str, Any], tasks: list[FitTask], data: Data, directory: Path) -> None:
    """One extra, untimed batch per engine under cProfile (the driver's side): ENGINE.pstats and ENGINE.txt."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, session in sessions.items():
        profiler = cProfile.Profile()
        started = time.perf_counter()
        profiler.enable()
        results = session.run_batch(tasks, data)
        profiler.disable()
        wall = time.perf_counter() - started
        profiler.dump_stats(directory / f"{name}.pstats")
        text = io.StringIO()
        stats = pstats.Stats(profiler, stream=text).sort_stats("cumulative")
        stats.print_stats(30)
        fits = ", ".join(f"{r.fit_s:.2f}" for r in results)
        (directory / f"{name}.txt").write_text(f"wall {wall:.3f} s; fits (s): {fits}\n\n{text.getvalue()}")
        log(f"profiled {name}: {wall:.2f} s -> {directory / f'{name}.pstats'}")

"""A measurement's resource columns, from what each fit measured where it ran (:mod:`sweeper.workload.usage`).

- ``cpu_s_fits``: CPU seconds of the fits' own threads (BLAS threads a fit starts are not in it);
- ``cpu_s_workers``: CPU seconds of the processes that ran fits (Dask workers, Spark Python workers
  and their executor JVMs, the baseline's worker) from their first fit's start to their last fit's end;
- ``slot_utilisation``: ``cpu_s_workers / (slots x fit_wall_s)``, slots = granted executors x cores;
- ``worker_peak_rss_gib_max`` / ``_median`` over the launch's workers that ran fits: a Dask worker's or
  the baseline worker's peak resident memory; a Spark executor's is its JVM's plus its Python workers';
- ``jvm_peak_heap_gib``: Spark's own executor metrics (the largest executor's peak ``JVMHeapMemory``);
- ``python_peak_rss_gib_max``: Spark only, the largest sum over one executor of its Python workers' peak
  resident memory (what ``spark.executor.memoryOverhead`` pays for, beside the JVM's own off-heap).

A figure that cannot be had is null and ``resource_note`` says why; measuring never fails a row.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence

from sweeper.store.row import ResourceColumns
from sweeper.workload.fit import FitResult
from sweeper.workload.usage import ProcessUsage, Usage

BYTES_PER_GIB = 1024**3


def resource_columns(
    results: Sequence[FitResult], fit_wall_s: float, slots: int, *, spark: bool, jvm_peak_heap_gib: float | None
) -> ResourceColumns:
    """The resource columns of a batch that completed (``spark``: the launch has executor JVMs)."""
    usages = [r.usage for r in results if r.usage is not None]
    columns = ResourceColumns(jvm_peak_heap_gib=jvm_peak_heap_gib)
    notes = []
    if len(usages) < len(results):
        notes.append(
            f"{len(results) - len(usages)} of {len(results)} fits did not measure themselves "
            "(data-parallel trains across the launch; spark-mllib trains in the executor JVMs)"
        )
    if usages:
        cpu_s_workers = _cpu_s_of_processes(usages)
        peaks_gib, python_gib = _worker_peaks_gib(usages)
        columns.update(
            ResourceColumns(
                cpu_s_fits=sum(u.thread_cpu_s for u in usages),
                cpu_s_workers=cpu_s_workers,
                slot_utilisation=cpu_s_workers / (slots * fit_wall_s) if slots > 0 and fit_wall_s > 0 else None,
                worker_peak_rss_gib_max=max(peaks_gib) if peaks_gib else None,
                worker_peak_rss_gib_median=statistics.median(peaks_gib) if peaks_gib else None,
                python_peak_rss_gib_max=max(python_gib) if spark and python_gib else None,
            )
        )
        if not peaks_gib:
            notes.append("the workers' peak memory could not be read")
    if spark and jvm_peak_heap_gib is None:
        notes.append("Spark reported no executor heap peak yet (executor metrics come with heartbeats)")
    columns["resource_note"] = "; ".join(notes) or None
    return columns


def _cpu_s_of_processes(usages: Sequence[Usage]) -> float:
    """CPU seconds of every process that ran fits (and of their executor JVMs), over the span of its fits."""
    spans: dict[tuple[str, int], list[ProcessUsage]] = defaultdict(list)
    for usage in usages:
        spans[(usage.host, usage.before.pid)] += [usage.before, usage.after]
        if usage.jvm_before is not None and usage.jvm_after is not None:
            spans[(usage.host, usage.jvm_before.pid)] += [usage.jvm_before, usage.jvm_after]
    return sum(max(p.cpu_s for p in seen) - min(p.cpu_s for p in seen) for seen in spans.values())


def _worker_peaks_gib(usages: Sequence[Usage]) -> tuple[list[float], list[float]]:
    """Each worker's peak resident memory (a process's own, or a Spark executor's JVM plus its Python workers),
    and each Spark executor's Python workers' together."""
    process_peak: dict[tuple[str, int], int] = {}
    executor_of: dict[tuple[str, int], tuple[str, int]] = {}
    executor_peak: dict[tuple[str, int], int] = {}
    for usage in usages:
        process = (usage.host, usage.after.pid)
        process_peak[process] = max(process_peak.get(process, 0), usage.after.peak_rss_bytes or 0)
        jvm = usage.jvm_after
        if jvm is not None:
            executor_of[process] = (usage.host, jvm.pid)
            executor_peak[(usage.host, jvm.pid)] = max(
                executor_peak.get((usage.host, jvm.pid), 0), jvm.peak_rss_bytes or 0
            )
    workers: dict[tuple[str, int], int] = defaultdict(int)
    pythons: dict[tuple[str, int], int] = defaultdict(int)
    for process, peak in process_peak.items():
        workers[executor_of.get(process, process)] += peak
        if process in executor_of:
            pythons[executor_of[process]] += peak
    for executor, peak in executor_peak.items():
        workers[executor] += peak
    return _gib(workers.values()), _gib(pythons.values())


def _gib(peaks_bytes: Iterable[int]) -> list[float]:
    return [peak / BYTES_PER_GIB for peak in peaks_bytes if peak > 0]

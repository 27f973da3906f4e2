"""Right-sizing from the resource figures: memory granted vs the measured peak, slots left idle.

Per workload, engine and configuration (an *arm*: ``engine``, ``cores_per_executor``, ``executors``,
``executor_memory_gib``), over ``status == 'ok'`` rows of cluster engines; see :func:`memory_advice`
and :func:`idle_slots`. Used by :mod:`sweeper.results.recommend` and the report.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from sweeper.config.sizing import MIN_EXECUTOR_MEMORY_MIB, REPORT_RULE, report_overhead_mib, spark_overhead_mib
from sweeper.engines import descriptor
from sweeper.names import BASELINE_ENGINE, CONFIG, on_spark
from sweeper.results import statistics
from sweeper.results.groups import first_rows, group_ids
from sweeper.results.statistics import ok_mask
from sweeper.shapes import shape_text
from sweeper.units import MIB_PER_GIB

ARM = ("engine", *CONFIG)
HEADROOM = 1.25
HEADROOM_TEXT = f"{round((HEADROOM - 1) * 100)} %"  # as the texts write it: 25 %
ROUND_GIB = 0.5
LOW_UTILISATION = 0.5
STRAGGLER_RATIO = 2.0


@dataclass(frozen=True)
class ConfigurationAdvice:
    """Advice on one engine and configuration at one workload point: what it is about."""

    workload: dict[str, Any]
    engine: str
    cores_per_executor: int
    executors: int
    executor_memory_gib: float


def _configuration_of(workload: dict[str, Any], row: Mapping[str, Any]) -> dict[str, Any]:
    """The :class:`ConfigurationAdvice` fields of a configuration's (first) row, as keyword arguments."""
    return {
        "workload": workload,
        "engine": str(row["engine"]),
        "cores_per_executor": as_int(row["cores_per_executor"]),
        "executors": as_int(row["executors"]),
        "executor_memory_gib": float(row["executor_memory_gib"]),
    }


@dataclass(frozen=True)
class MemoryAdvice(ConfigurationAdvice):
    """Granted memory against the measured peak for one engine and configuration (see :func:`memory_advice`)."""

    granted_gib: float
    peak_gib: float
    suggested_gib: float
    overhead_gib: float
    python_peak_gib: float
    suggested_overhead_gib: float
    executors_per_node: int
    executors_per_node_by_memory: int | None
    limit: str
    alternative: tuple[int, int] | None
    note: str


@dataclass(frozen=True)
class IdleSlots(ConfigurationAdvice):
    """A configuration whose slots were mostly idle: its median slot utilisation and the likely reasons."""

    slot_utilisation: float
    reasons: tuple[str, ...]


def plain_value(value: Any) -> Any:
    """A pandas/numpy scalar as a plain Python value (NA as None), for JSON and comparisons."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    return value.item() if hasattr(value, "item") else value


def as_int(value: Any) -> int:
    """An integer column's value (-1 for NA)."""
    return -1 if pd.isna(value) else int(value)


def _suggested_memory_gib(peak_gib: float) -> float:
    """The smallest limit with 25 % headroom over the peak, rounded up to 0.5 GiB, at least 1 GiB.

    >>> _suggested_memory_gib(1.0), _suggested_memory_gib(3.3), _suggested_memory_gib(0.2)
    (1.5, 4.5, 1.0)
    """
    return max(MIN_EXECUTOR_MEMORY_MIB / MIB_PER_GIB, _round_up_gib(peak_gib * HEADROOM))


def _round_up_gib(gib: float) -> float:
    """Up to the next multiple of ``ROUND_GIB`` (a value already on one stays)."""
    return math.ceil(round(gib / ROUND_GIB, 9)) * ROUND_GIB


# -- memory and slots ---------------------------------------------------------------------------------


_MEMORY_COLUMNS = (
    "status",
    "nodes",
    "rule",
    "memory_overhead_gib",
    "granted_executor_memory_gib",
    "worker_peak_rss_gib_max",
    "jvm_peak_heap_gib",
    "python_peak_rss_gib_max",
    "resource_note",
)
_SLOT_COLUMNS = (
    "status",
    "slot_utilisation",
    "threads_per_fit",
    "total_cores",
    "n_fits",
    "fit_task_sum_s",
    "fit_task_max_s",
)


def _engine_rows(df: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """The ok rows of engines other than the baseline, only the columns asked for that ``df`` has."""
    keep = [column for column in dict.fromkeys(columns) if column in df]
    return df.loc[ok_mask(df) & df["engine"].ne(BASELINE_ENGINE).fillna(False).astype(bool), keep]


def memory_advice(df: pd.DataFrame) -> list[MemoryAdvice]:
    """Granted memory against the measured peak, per workload, engine and configuration (ok rows).

    - ``granted_gib``: ``granted_executor_memory_gib`` when the launch recorded it, else
      ``executor_memory_gib`` (Dask: the worker's memory limit; Spark: the executor heap,
      ``spark.executor.memory``).
    - ``peak_gib``: Dask, the largest ``worker_peak_rss_gib_max`` (one worker's resident set) over
      the configuration's ok rows and epochs; Spark, the largest ``jvm_peak_heap_gib`` (the heap
      alone; a store without it falls back to the executor's resident set, JVM and Python workers).
    - ``suggested_gib``: :func:`_suggested_memory_gib` of the peak (Dask: the memory limit; Spark:
      the heap). NaN when nothing was measured (stores before schema 4): ``limit`` is then
      ``not measured``.
    - Spark's ``spark.executor.memoryOverhead`` apart: ``overhead_gib`` granted, ``python_peak_gib``
      (``python_peak_rss_gib_max``: one executor's Python workers together, the fits' memory) and
      ``suggested_overhead_gib`` = the JVM's own off-heap share Spark assumes for the suggested
      heap (``max(384 MiB, 10 %)``) plus the Python workers' peak with 25 % headroom, rounded up to
      0.5 GiB. NaN for Dask and where the Python workers were not measured (stores before schema 6).

    What the sizing rules would give: the store does not record node sizes, so a node is taken
    as what the rule handed out, ``executors_per_node`` slots (``ceil(executors / nodes)``) of
    ``executor memory + overhead`` and ``cores_per_executor`` cores each. With the suggested
    memory (with Spark's suggested overhead, else the rule's, :mod:`sweeper.config.sizing`) that node
    memory holds ``executors_per_node_by_memory`` executors. ``limit``: ``memory`` when the suggestion
    (or Spark's suggested overhead) is above the grant; ``more executors fit`` when a node's cores and memory hold more
    executors of fewer cores (``alternative`` = (executors per node, cores each)); ``cores``
    when the freed memory has no core to run another executor.

    Advice never contradicts what the sweep measured: an alternative shape that the sweep measured for the
    same engine and workload (any row, ok or not) is not proposed; the note says it was measured and that the
    answer says how the two compare.
    A dry run's peaks (launches shrunk to the machine that ran them, epochs and training rows capped) say
    nothing of the real cluster: its advice is ``not measured``, with a note that says why.
    """
    keys = [*statistics.workload_keys(df), *ARM]
    ok = _engine_rows(df, [*keys, *_MEMORY_COLUMNS])
    ids = group_ids(ok, keys)
    firsts = first_rows(ok, ids)
    measured = [c for c in ("granted_executor_memory_gib", *_PEAK_COLUMNS) if c in ok]
    largest = ok[measured].astype(float).groupby(ids).max().reindex(columns=_LARGEST_COLUMNS)
    notes = _notes(ok, ids)
    advice = [
        _advice(_workload(keys, first), first, dict(zip(_LARGEST_COLUMNS, peaks, strict=True)), notes.get(group, []))
        for group, (first, peaks) in enumerate(zip(firsts, largest.itertuples(index=False), strict=True))
    ]
    nodes = [max(as_int(first["nodes"]), 1) for first in firsts]
    shapes = _measured_shapes(df, keys)
    return [_unless_measured(a, n, shapes) for a, n in zip(advice, nodes, strict=True)]


def _measured_shapes(df: pd.DataFrame, keys: Sequence[str]) -> set[tuple[tuple[tuple[str, str], ...], str, int, int]]:
    """(workload, engine, executors, cores) of every configuration with a row, whatever its status."""
    rows = df.loc[df["engine"].ne(BASELINE_ENGINE).fillna(False).astype(bool), list(keys)].drop_duplicates()
    return {
        (_frozen(_workload(keys, row)), str(row["engine"]), as_int(row["executors"]), as_int(row["cores_per_executor"]))
        for row in rows.to_dict("records")
    }


DRY_RUN_NOTE = (
    "a dry run: peaks measured on launches shrunk to this machine, with capped epochs and training rows, say "
    "nothing of the real cluster's memory; no advice until the real sweep measures it"
)


def _frozen(workload: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """A workload as a set member."""
    return tuple(sorted((key, repr(value)) for key, value in workload.items()))


def _unless_measured(
    advice: MemoryAdvice, nodes: int, shapes: set[tuple[tuple[tuple[str, str], ...], str, int, int]]
) -> MemoryAdvice:
    """``advice`` as it is, or, when its alternative shape on ``nodes`` nodes is one the sweep measured (in
    ``shapes``: workload, engine, executors, cores), with a note that says so instead of proposing it."""
    if advice.alternative is None:
        return advice
    per_node, cores = advice.alternative
    executors = per_node * nodes
    if (_frozen(advice.workload), advice.engine, executors, cores) not in shapes:
        return advice
    note = (
        f"memory is not the binding limit: a node's memory and cores would hold {per_node} executors of "
        f"{cores} core(s) instead of {advice.executors_per_node} of {advice.cores_per_executor}, a shape this "
        f"sweep measured ({advice.engine} {shape_text(executors, cores)}): the answer says how the two compare"
    )
    return replace(advice, note=note)


_PEAK_COLUMNS = ("jvm_peak_heap_gib", "worker_peak_rss_gib_max", "python_peak_rss_gib_max")
_LARGEST_COLUMNS = ("granted_executor_memory_gib", *_PEAK_COLUMNS)


def _workload(keys: Sequence[str], first: Mapping[str, Any]) -> dict[str, Any]:
    """The workload keys of a group, from its first row."""
    return {key: plain_value(first[key]) for key in keys[: -len(ARM)]}


def _notes(rows: pd.DataFrame, ids: np.ndarray) -> dict[int, list[str]]:
    """Each group's distinct ``resource_note`` values, sorted (groups without one left out)."""
    if "resource_note" not in rows:
        return {}
    noted = rows["resource_note"].notna().to_numpy()
    found: dict[int, set[str]] = {}
    for group, note in zip(ids[noted], rows["resource_note"].to_numpy()[noted], strict=True):
        found.setdefault(int(group), set()).add(str(note))
    return {group: sorted(notes) for group, notes in found.items()}


def _advice(
    workload: dict[str, Any], first: Mapping[str, Any], largest: dict[str, float], notes: list[str]
) -> MemoryAdvice:
    """One configuration's advice from its first row, the largest of its measured columns (NaN: not measured)
    and its resource notes."""
    cores, executors = as_int(first["cores_per_executor"]), as_int(first["executors"])
    granted = largest["granted_executor_memory_gib"]
    granted = float(first["executor_memory_gib"]) if math.isnan(granted) else granted
    spark = on_spark(first["engine"])
    heap_peak = largest["jvm_peak_heap_gib"] if spark else math.nan
    peak = heap_peak if not math.isnan(heap_peak) else largest["worker_peak_rss_gib_max"]
    python_peak = largest["python_peak_rss_gib_max"] if spark else math.nan
    rule = None if pd.isna(first["rule"]) else str(first["rule"])
    overhead_now = _overhead_gib(granted, rule, first["memory_overhead_gib"])
    nodes = max(as_int(first["nodes"]), 1)
    per_node = max(math.ceil(executors / nodes), 1)
    base: dict[str, Any] = {
        **_configuration_of(workload, first),
        "granted_gib": granted,
        "peak_gib": peak,
        "overhead_gib": overhead_now if spark else math.nan,
        "python_peak_gib": python_peak,
        "executors_per_node": per_node,
    }
    if workload.get("dry_run"):  # the planned grant, no peak: what ran here says nothing of the cluster
        planned = {
            "granted_gib": float(first["executor_memory_gib"]),
            "peak_gib": math.nan,
            "python_peak_gib": math.nan,
        }
        return _not_measured({**base, **planned}, DRY_RUN_NOTE)
    if math.isnan(peak):
        return _not_measured(base, "memory was not measured" + (f" ({'; '.join(notes)})" if notes else ""))
    suggested = _suggested_memory_gib(peak)
    overhead = suggested_overhead_gib(suggested, python_peak) if spark else math.nan
    overhead_then = _overhead_gib(suggested, rule, first["memory_overhead_gib"]) if math.isnan(overhead) else overhead
    by_memory = math.floor(per_node * (granted + overhead_now) / (suggested + overhead_then))
    short = suggested > granted or overhead_then > overhead_now + 1e-9
    limit, alternative, note = _limit(short, per_node, by_memory, cores)
    return MemoryAdvice(**base, suggested_gib=suggested, suggested_overhead_gib=overhead,
                        executors_per_node_by_memory=by_memory, limit=limit, alternative=alternative,
                        note=note)  # fmt: skip


def _not_measured(base: dict[str, Any], note: str) -> MemoryAdvice:
    """The advice of a configuration whose memory says nothing to size by: ``base``'s fields and why."""
    return MemoryAdvice(**base, suggested_gib=math.nan, suggested_overhead_gib=math.nan,
                        executors_per_node_by_memory=None, limit="not measured", alternative=None,
                        note=note)  # fmt: skip


def suggested_overhead_gib(heap_gib: float, python_peak_gib: float) -> float:
    """Spark's memory overhead for a heap whose Python workers peaked at ``python_peak_gib``.

    The JVM's own off-heap share Spark assumes (``max(384 MiB, 10 %)`` of the heap) plus the Python
    workers' peak with 25 % headroom, rounded up to 0.5 GiB; NaN when the workers were not measured.

    >>> suggested_overhead_gib(4.0, 0.8), suggested_overhead_gib(20.0, 3.0), suggested_overhead_gib(4.0, math.nan)
    (1.5, 6.0, nan)
    """
    if math.isnan(python_peak_gib):
        return math.nan
    jvm_gib = spark_overhead_mib(round(heap_gib * MIB_PER_GIB)) / MIB_PER_GIB
    return _round_up_gib(jvm_gib + python_peak_gib * HEADROOM)


def _overhead_gib(memory_gib: float, rule: str | None, recorded_gib: Any) -> float:
    """The memory overhead the sizing rule adds to an executor of ``memory_gib`` (the recorded one otherwise)."""
    memory_mib = round(memory_gib * MIB_PER_GIB)
    if rule == "spark-default":
        return spark_overhead_mib(memory_mib) / MIB_PER_GIB
    if rule == REPORT_RULE:  # the rule sizes the overhead from the slot = memory + overhead
        first = report_overhead_mib(memory_mib)
        return max(first, report_overhead_mib(memory_mib + first)) / MIB_PER_GIB
    return 0.0 if pd.isna(recorded_gib) else float(recorded_gib)


def _limit(short: bool, per_node: int, by_memory: int, cores: int) -> tuple[str, tuple[int, int] | None, str]:
    """(limit, alternative shape, sentence) for one configuration's memory (see :func:`memory_advice`).

    ``short``: an executor needs more than it was granted (its heap or limit, or Spark's overhead).
    """
    if short:
        return (
            "memory",
            None,
            f"more than granted: a node's memory holds {by_memory} such executors instead of {per_node}",
        )
    node_cores = per_node * cores
    executors = min(by_memory, node_cores)
    if executors > per_node:
        each = node_cores // executors
        return (
            "more executors fit",
            (executors, each),
            f"a node's memory and cores then hold {executors} executors of {each} core(s) instead of "
            f"{per_node} of {cores}",
        )
    return (
        "cores",
        None,
        f"cores are the binding limit: a node's {node_cores} core(s) run no more than {per_node} executor(s) "
        f"of {cores} core(s)",
    )


def idle_slots(df: pd.DataFrame, threshold: float = LOW_UTILISATION) -> list[IdleSlots]:
    """Configurations whose median ``slot_utilisation`` is below ``threshold``, with the likely reasons.

    Reasons looked for: fewer fits than slots (``n_fits`` < ``total_cores / threads_per_fit``);
    threads of one Dask worker sharing its Python interpreter (GIL-bound) when
    ``cores_per_executor`` > 1; stragglers, when the longest fit (``fit_task_max_s``) takes
    ``STRAGGLER_RATIO`` times the mean fit (``fit_task_sum_s / n_fits``) or more.
    """
    if "slot_utilisation" not in df:
        return []
    keys = [*statistics.workload_keys(df), *ARM]
    ok = _engine_rows(df, [*keys, *_SLOT_COLUMNS])
    ids = group_ids(ok, keys)
    firsts = first_rows(ok, ids)
    utilisation = ok["slot_utilisation"].astype(float).groupby(ids).median().reindex(range(len(firsts)))
    mean_fit = ok["fit_task_sum_s"].astype(float) / ok["n_fits"].astype(float)
    straggle = (ok["fit_task_max_s"].astype(float) / mean_fit).groupby(ids).median().reindex(range(len(firsts)))
    return [
        IdleSlots(
            **_configuration_of(_workload(keys, first), first),
            slot_utilisation=float(median),
            reasons=_idle_reasons(first, float(straggle.iloc[group])),
        )
        for group, (first, median) in enumerate(zip(firsts, utilisation, strict=True))
        if median < threshold  # NaN (nothing measured) is not
    ]


def _idle_reasons(first: Mapping[str, Any], straggle: float) -> tuple[str, ...]:
    """Why a configuration's slots idled, from its first row and its median longest fit / mean fit (NaN: unknown)."""
    reasons = []
    threads = max(as_int(first["threads_per_fit"]), 1)
    slots, fits = as_int(first["total_cores"]) // threads, as_int(first["n_fits"])
    if 0 < fits < slots:
        reasons.append(f"fewer fits than slots: {fits} fits for {slots} slots")
    engine = descriptor(str(first["engine"]))
    if engine and engine.threads_share_interpreter and as_int(first["cores_per_executor"]) > 1:
        reasons.append(
            f"GIL-bound threads: {as_int(first['cores_per_executor'])} threads share one Python interpreter "
            f"in each {engine.display} worker"
        )
    if straggle >= STRAGGLER_RATIO:
        reasons.append(f"stragglers: the longest fit takes {straggle:.1f}x the mean fit")
    return tuple(reasons) or ("no cause visible in the rows (start-up, scheduling or data transfer)",)

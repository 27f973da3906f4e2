"""One way to write an executor shape, in every view: ``7 executors x 5 cores x 13 GiB``.

Executors first, then cores and memory per executor: the order of ``spark-submit --num-executors
--executor-cores --executor-memory`` (for Dask: workers, threads per worker, memory limit per
worker). The terminal, the plan table, the answer, the report and its plots all use
:func:`shape_text`; JSON keys keep their column names.
"""

from __future__ import annotations

import math
from typing import Any

from sweeper.units import MIB_PER_GIB

BASELINE_TEXT = "1 thread (baseline)"


class ExecutorFigures:
    """What a shape of executors derives from its sizes: memory in GiB and the cores of them all (a mixin of
    the sizing rule's :class:`~sweeper.config.sizing.ExecutorShape` and the plan's ``Launch``)."""

    executors: int
    cores_per_executor: int
    executor_memory_mib: int
    memory_overhead_mib: int

    @property
    def executor_memory_gib(self) -> float:
        return self.executor_memory_mib / MIB_PER_GIB

    @property
    def memory_overhead_gib(self) -> float:
        return self.memory_overhead_mib / MIB_PER_GIB

    @property
    def total_cores(self) -> int:
        return self.executors * self.cores_per_executor


def counted(number: Any, noun: str, plural: str = "") -> str:
    """``number`` with ``noun`` in the singular or plural (``plural``, else ``noun`` + s; "?" for a missing number).

    >>> counted(1, "core"), counted(2, "executor"), counted(None, "core"), counted(3, "launch", "launches")
    ('1 core', '2 executors', '? cores', '3 launches')
    """
    return f"{_whole(number)} {noun_for(number, noun, plural)}"


def noun_for(number: Any, noun: str, plural: str = "") -> str:
    """``noun`` in the singular for one, else in the plural (``plural``, else ``noun`` + s)."""
    return noun if _whole(number) == "1" else plural or f"{noun}s"


def _gib_text(memory_gib: Any) -> str:
    """A memory size in GiB, as few digits as it needs (``13 GiB``, ``1.5 GiB``, ``? GiB``)."""
    try:
        value = float(memory_gib)
    except (TypeError, ValueError):
        return "? GiB"
    return "? GiB" if math.isnan(value) else f"{value:g} GiB"


def shape_text(executors: Any, cores_per_executor: Any, memory_gib: Any = None, *, baseline: bool = False) -> str:
    """An executor shape; memory left out when not given; the single-thread baseline by its name.

    >>> shape_text(7, 5, 13.0)
    '7 executors x 5 cores x 13 GiB'
    >>> shape_text(1, 1, 1.5), shape_text(2, 1)
    ('1 executor x 1 core x 1.5 GiB', '2 executors x 1 core')
    >>> shape_text(1, 1, 0.0, baseline=True)
    '1 thread (baseline)'
    """
    if baseline:
        return BASELINE_TEXT
    text = f"{counted(executors, 'executor')} x {counted(cores_per_executor, 'core')}"
    return text if memory_gib is None else f"{text} x {_gib_text(memory_gib)}"


def shape_text_mib(executors: int, cores_per_executor: int, memory_mib: int) -> str:
    """:func:`shape_text` of a shape whose memory is in MiB (plans and grants).

    >>> shape_text_mib(6, 5, 13312), shape_text_mib(1, 1, 24105)
    ('6 executors x 5 cores x 13 GiB', '1 executor x 1 core x 23.54 GiB')
    """
    return shape_text(executors, cores_per_executor, memory_mib / MIB_PER_GIB)


def _whole(number: Any) -> str:
    try:
        return str(int(number))
    except (TypeError, ValueError):
        return "?"

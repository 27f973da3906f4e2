"""Memory and idle slots in "The answer": what to right-size, the slots left idle, peak vs granted memory drawn.

Up to :data:`NAMED_ADVICE` configurations are named one by one; beyond, the sentences name those the answer
names (winners and runners-up) and count the others per engine, with the range of their figures; the memory
figure draws each engine's fastest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import pandas as pd

from sweeper.names import CONFIG
from sweeper.results import recommend, recommend_view
from sweeper.results.report import plots, selection
from sweeper.results.report.blocks import Block, Picture
from sweeper.results.right_sizing import DRY_RUN_NOTE, ConfigurationAdvice, IdleSlots, MemoryAdvice
from sweeper.shapes import shape_text

NAMED_ADVICE = 16  # configurations a memory or idle-slot sentence names one by one

Advice = TypeVar("Advice", bound=ConfigurationAdvice)


def memory_text(found: recommend.Recommendation, named: set[tuple[str, str]] | None = None) -> str:
    """The memory sentence: the configurations to right-size, or that none needs it, or that none was measured.

    ``named`` (engine, configuration label): those named when more than :data:`NAMED_ADVICE` need it.
    """
    measured = [m for m in found.memory if m.limit != "not measured"]
    if not measured and any(m.note == DRY_RUN_NOTE for m in found.memory):
        return f"Memory: {DRY_RUN_NOTE}."
    if not measured:
        return "Memory was not measured in this sweep: no right-sizing."
    resize = [m for m in measured if m.suggested_gib != m.granted_gib or m.suggested_overhead_gib > m.overhead_gib]
    if not resize:
        return "Memory: every configuration used what it was granted."
    said, others = _named(resize, named)
    rest = _counted(others, _memory_range, "to right-size")
    return "Memory: " + "; ".join([*(recommend_view.memory_sentence(m) for m in said), *rest]) + "."


def idle_text(found: recommend.Recommendation, named: set[tuple[str, str]] | None = None) -> str | None:
    """The slots left idle, and why (None: no configuration left slots idle); ``named`` as :func:`memory_text`'s."""
    if not found.idle:
        return None
    said, others = _named(list(found.idle), named)
    lines = [
        f"{i.engine} {shape_text(i.executors, i.cores_per_executor)} ({i.slot_utilisation:.0%} used: "
        f"{', '.join(i.reasons)})"
        for i in said
    ]
    rest = _counted(others, _idle_range, "with slots left idle")
    return "Slots left idle: " + "; ".join([*lines, *rest]) + "."


def _label(advice: ConfigurationAdvice) -> tuple[str, str]:
    """A configuration as the answer's figure keys it: engine and shape label."""
    return advice.engine, shape_text(advice.executors, advice.cores_per_executor, advice.executor_memory_gib)


def _named(advice: list[Advice], named: set[tuple[str, str]] | None) -> tuple[list[Advice], list[Advice]]:
    """The advice said one by one (all of it, up to :data:`NAMED_ADVICE`; else that of ``named``), and the rest."""
    if len(advice) <= NAMED_ADVICE or named is None:
        return advice, []
    return [a for a in advice if _label(a) in named], [a for a in advice if _label(a) not in named]


def _counted(advice: Sequence[Advice], describe: Callable[[Sequence[Advice]], str], what: str) -> list[str]:
    """The advice not named, counted per engine: "N more ENGINE configurations WHAT (DESCRIBE)"."""
    engines = dict.fromkeys(a.engine for a in advice)
    counted = []
    for engine in engines:
        mine = [a for a in advice if a.engine == engine]
        counted.append(f"{len(mine):,} other {engine} configuration(s) {what} ({describe(mine)})")
    return counted


def _idle_range(idle: Sequence[IdleSlots]) -> str:
    """The share of slots several configurations used, as its range."""
    return f"{_span([i.slot_utilisation for i in idle], '{:.0%}')} used"


def _memory_range(advice: Sequence[MemoryAdvice]) -> str:
    """Granted, peak and suggested memory of several configurations, each as its range."""
    spans = (
        ("granted", [m.granted_gib for m in advice], "{:g} GiB"),
        ("peak", [m.peak_gib for m in advice], "{:.2f} GiB"),
        ("suggested", [m.suggested_gib for m in advice], "{:g} GiB"),
    )
    return ", ".join(f"{name} {_span(values, form)}" for name, values, form in spans)


def _span(values: Sequence[float], form: str) -> str:
    """The lowest and the highest of ``values`` written with ``form``, or the one value.

    >>> _span([1.0, 0.5, 2.0], "{:g} GiB"), _span([0.3, 0.3], "{:.0%}")
    ('0.5 GiB to 2 GiB', '30%')
    """
    low, high = form.format(min(values)), form.format(max(values))
    return low if low == high else f"{low} to {high}"


def memory_picture(found: recommend.Recommendation, fastest: set[tuple[str, str]] | None = None) -> list[Block]:
    """Peak memory against granted memory per configuration; nothing when no peak was measured.

    ``fastest`` (engine, configuration label): the configurations drawn when an engine has more than
    :data:`~sweeper.results.report.selection.FIGURE_CONFIGURATIONS` (default: all).
    """
    memory = pd.DataFrame(
        [
            {"engine": m.engine, "config": shape_text(m.executors, m.cores_per_executor, m.executor_memory_gib),
             "cores_per_executor": m.cores_per_executor, "executors": m.executors,
             "executor_memory_gib": m.executor_memory_gib, "granted_gib": m.granted_gib, "peak_gib": m.peak_gib,
             "suggested_gib": m.suggested_gib}
            for m in found.memory
        ],
        columns=["engine", "config", *CONFIG, "granted_gib", "peak_gib", "suggested_gib"],
    )  # fmt: skip
    if not memory["peak_gib"].notna().any():
        return []
    measured = memory[memory["peak_gib"].notna()]
    drawn = measured
    if fastest is not None and measured["engine"].value_counts().max() > selection.FIGURE_CONFIGURATIONS:
        drawn = measured[[key in fastest for key in zip(measured["engine"], measured["config"], strict=True)]]
    total = selection.configurations(measured, ["config"])
    note = selection.left_out_note(total, selection.configurations(drawn, ["config"]), where="counted in the answer")
    alt = selection.with_note("Peak memory against granted memory", note)
    return [Picture("answer_memory.png", alt, plots.png(plots.memory_vs_granted(drawn, note)))]

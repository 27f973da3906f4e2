"""Memory and idle slots in "The answer": what to right-size, the slots left idle, peak vs granted memory drawn."""

from __future__ import annotations

import pandas as pd

from sweeper.results import recommend, recommend_view
from sweeper.results.report import plots
from sweeper.results.report.blocks import Block, Picture
from sweeper.shapes import shape_text


def memory_text(found: recommend.Recommendation) -> str:
    """The memory sentence: the configurations to right-size, or that none needs it, or that none was measured."""
    measured = [m for m in found.memory if m.limit != "not measured"]
    if not measured:
        return "Memory was not measured in this sweep: no right-sizing."
    resize = [m for m in measured if m.suggested_gib != m.granted_gib or m.suggested_overhead_gib > m.overhead_gib]
    return (
        "Memory: " + "; ".join(recommend_view.memory_sentence(m) for m in resize) + "."
        if resize
        else "Memory: every configuration used what it was granted."
    )


def idle_text(found: recommend.Recommendation) -> str | None:
    """The slots left idle, and why (None: no configuration left slots idle)."""
    if not found.idle:
        return None
    return (
        "Slots left idle: "
        + "; ".join(
            f"{i.engine} {shape_text(i.executors, i.cores_per_executor)} ({i.slot_utilisation:.0%} used: "
            f"{', '.join(i.reasons)})"
            for i in found.idle
        )
        + "."
    )


def memory_picture(found: recommend.Recommendation) -> list[Block]:
    """Peak memory against granted memory per configuration; nothing when no peak was measured."""
    memory = pd.DataFrame(
        [
            {"engine": m.engine, "config": shape_text(m.executors, m.cores_per_executor, m.executor_memory_gib),
             "granted_gib": m.granted_gib, "peak_gib": m.peak_gib, "suggested_gib": m.suggested_gib}
            for m in found.memory
        ],
        columns=["engine", "config", "granted_gib", "peak_gib", "suggested_gib"],
    )  # fmt: skip
    if not memory["peak_gib"].notna().any():
        return []
    return [Picture("answer_memory.png", "Peak memory against granted memory", plots.memory_vs_granted(memory))]

"""What a stopped run's plan meant to measure and the store does not hold: for the partial answer after Ctrl-C.

A measurement is taken when the sweep holds an ``ok`` row of it, or a ``pruned`` one (a search decided not to
take it). Where the measurements are decided before the run (a full grid with fixed trials) each one not taken is
counted; where a search decides them as it goes, a point counts when none of its trials was taken, and how many
it would have taken is not known.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sweeper.config.grid import FULL_GRID
from sweeper.names import BASELINE_ENGINE, OK, PRUNED
from sweeper.planning.measurements import pending
from sweeper.planning.plan import Plan
from sweeper.shapes import shape_text
from sweeper.store.parquet import read_table


@dataclass(frozen=True)
class NotTaken:
    """A launch's measurements not taken: at which epochs, and how many (None: a search would have decided)."""

    label: str  # engine and shape
    epochs: tuple[int, ...]
    measurements: int | None


def not_taken(plan: Plan, store: Path) -> list[NotTaken]:
    """The plan's measurements the store's sweep does not hold, per launch in plan order."""
    table = read_table(store, plan.grid.name)
    statuses = zip(*(table.column(name).to_pylist() for name in ("measurement_key", "status")), strict=True)
    taken = {key for key, status in statuses if status in (OK, PRUNED)}
    todo, _ = pending(plan, taken)
    fixed = plan.grid.workload.adaptive is None and plan.grid.search.strategy == FULL_GRID
    if not fixed:  # only the points none of whose trials was taken
        begun = {(item.launch.index, item.point) for item in pending(plan, set())[0] if item.key in taken}
        todo = [item for item in todo if (item.launch.index, item.point) not in begun and item.trial == 0]
    found: dict[int, NotTaken] = {}
    for item in todo:
        launch = item.launch
        held = found.get(launch.index)
        epochs = tuple(sorted({*(held.epochs if held else ()), item.point.epochs}))
        count = ((held.measurements or 0) if held else 0) + 1 if fixed else None
        shape = shape_text(
            launch.executors, launch.cores_per_executor, launch.executor_memory_gib,
            baseline=launch.engine == BASELINE_ENGINE,
        )  # fmt: skip
        found[launch.index] = NotTaken(f"{launch.engine} {shape}", epochs, count)
    return list(found.values())

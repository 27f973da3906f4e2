"""``search: {strategy: halving}``: successive halving of the configurations, run on real launches.

A configuration is a launch (engine x executor shape) with a model point, the rung axis left
out. Rung by rung, the configurations still in the race are measured at the rung axis's next
value (each launch started once per rung, its points' trials as the grid says), and
:func:`sweeper.search.halving.successive_halving` decides which go on; its rank check brings
pruned ones back when the order changed. Each rung is a round (``visit_round`` = rung + 1) that
visits its launches (and each launch its points) in a random order drawn from the grid's seed and the round
(:mod:`sweeper.search.interleaving`); a resumed run draws the same. The single-thread baseline is a
reference, not a candidate: it is measured at every rung (round 0), before the rungs. What was never
measured gets a ``pruned`` row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from sweeper.names import BASELINE_ENGINE, PRUNED
from sweeper.planning.measurements import Todo, measurement_key
from sweeper.planning.plan import Launch, Plan, Point
from sweeper.run.rows import RunRecord, measurement_row
from sweeper.run.trials import (
    BASELINE_ROUND,
    LaunchQueue,
    TrialQueue,
    launch_order,
    trial_policy,
)
from sweeper.search.halving import HalvingPolicy, HalvingResult, Measured, rung_values, successive_halving
from sweeper.store.row import Row, VisitColumns
from sweeper.workload.data import Data

Configuration = tuple[int, Point]  # (launch index, point with the rung axis left out)
RunLaunch = Callable[[Launch, LaunchQueue], Iterator[Row]]
BASELINE_VISIT = VisitColumns(visit_round=BASELINE_ROUND, visit_position=1)  # the baseline, before the rungs


def configuration(launch: Launch, point: Point, rung_axis: str) -> Configuration:
    """A launch and point, the rung axis left out."""
    return (launch.index, _at_rung(point, rung_axis, 0))


def _at_rung(point: Point, rung_axis: str, value: Any) -> Point:
    """A configuration's point at one rung."""
    return replace(point, epochs=value) if rung_axis == "epochs" else replace(point, fraction=value)


class HalvingRun:
    """One halving sweep: measures through ``run_launch``, hands each row to ``emit`` as it is written."""

    def __init__(
        self, plan: Plan, run_launch: RunLaunch, done_s: Mapping[str, float | None], emit: Callable[[Row], None]
    ) -> None:
        self.plan, self.run_launch, self.done_s, self.emit = plan, run_launch, done_s, emit
        self.axis = plan.grid.search.rung_axis
        workload = plan.grid.workload
        self.rungs = rung_values(workload.epochs if self.axis == "epochs" else workload.fractions)
        self.launches = {launch.index: launch for launch in plan.launches}
        self.skipped = 0
        self.unmeasured: list[tuple[Configuration, int]] = []

    def candidates(self) -> list[Configuration]:
        """Every cluster configuration of the plan, in plan order."""
        found: dict[Configuration, None] = {}
        for launch in self.plan.launches:
            if launch.engine != BASELINE_ENGINE:
                for point in self.plan.points[launch.index]:
                    found[configuration(launch, point, self.axis)] = None
        return list(found)

    def run(self) -> HalvingResult[Configuration]:
        """Measure the baseline at every rung, then halve the configurations rung by rung."""
        for launch in self.plan.launches:
            if launch.engine == BASELINE_ENGINE:
                self._measure(launch, self.plan.points[launch.index], None, BASELINE_VISIT)
        candidates = self.candidates()
        search = self.plan.grid.search
        policy = HalvingPolicy(eta=search.eta, tie_rel=search.delta, confidence=search.confidence)
        engine_of = self._engine_of  # the best configuration of each engine always goes on
        result = successive_halving(candidates, len(self.rungs), self._measure_rung, policy, group=engine_of)
        self.unmeasured = result.unmeasured(candidates)
        return result

    def _engine_of(self, key: Configuration) -> str:
        return self.launches[key[0]].engine

    def _measure_rung(self, rung: int, keys: Sequence[Configuration]) -> dict[Configuration, Measured]:
        """The ok times of each configuration of ``keys`` at rung ``rung``, launches (round ``rung + 1``) in the rung's
        random order."""
        medians: dict[Configuration, Measured] = {}
        round_ = rung + 1
        for position, index in enumerate(launch_order(self.plan, {index for index, _ in keys}, round_), 1):
            launch = self.launches[index]
            wanted = {point for i, point in keys if i == index}
            points = [
                p
                for p in self.plan.points[index]
                if getattr(p, self.axis) == self.rungs[rung] and configuration(launch, p, self.axis)[1] in wanted
            ]
            visit = VisitColumns(visit_round=round_, visit_position=position)
            medians.update(self._measure(launch, points, rung, visit))
        return medians

    def _measure(
        self, launch: Launch, points: Sequence[Point], rung: int | None, visit: VisitColumns
    ) -> dict[Configuration, Measured]:
        policy = trial_policy(self.plan.grid.workload)
        queue = TrialQueue(self.plan, launch, points, self.done_s, policy, rung, visit)
        for row in self.run_launch(launch, queue):
            self.emit(row)
        self.skipped += queue.skipped
        return {configuration(launch, state.point, self.axis): list(state.times_s) for state in queue.points}

    def pruned_rows(self, run: RunRecord, recorded: set[str], data: Mapping[float, Data]) -> list[Row]:
        """A ``pruned`` row for each (configuration, rung) never measured (one the store holds is not written again)."""
        rows = []
        for (index, point), rung in self.unmeasured:
            launch, planned = self.launches[index], _at_rung(point, self.axis, self.rungs[rung])
            key = measurement_key(self.plan.grid, self.plan, launch, planned, 0)
            if key in recorded or planned not in self.plan.points[index]:
                continue
            why = f"not among the fastest at {self.axis} {self.rungs[rung - 1]}, so not measured here"
            outcome = run.outcome(PRUNED, why)
            todo = Todo(launch, planned, 0, key)
            rows.append(
                measurement_row(self.plan, todo, run, data[planned.fraction], outcome=outcome, search={"rung": rung})
            )
        return rows


def rung_lines(result: HalvingResult[Configuration], rungs: Sequence[Any], axis: str) -> list[str]:
    """What halving did at each rung, for the end of ``sweeper run``."""
    lines = []
    for rung in result.rungs:
        text = f"{axis} {rungs[rung.index]}: {len(rung.measured)} measured, {len(rung.promoted)} kept"
        if rung.check is not None and rung.check.agreement is not None:
            text += f"; rank agreement with {axis} {rungs[rung.index - 1]}: Kendall tau {rung.check.agreement:.2f}"
            if rung.widened:
                text += f", below the threshold: {len(rung.widened)} pruned configuration(s) brought back"
        lines.append(text)
    return lines

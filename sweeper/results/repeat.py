"""Does the answer repeat? Two sweeps of one grid, their answers compared point by point.

At each workload and epochs value both sweeps answered, the answers **agree** when both name the same
configuration, when neither is settled (inconclusive, too few trials, held back), or when a winner one sweep
settled on ("faster", "cheaper") is within the race's indifference zone (:data:`RACE_DELTA`) of the other
sweep's winner there (either is a right answer). They **differ** when a settled winner is more than the zone
slower than the other sweep's winner in the other sweep (or not measured there). A point only one sweep answered
is not compared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sweeper.config.grid import RACE_DELTA
from sweeper.results.recommend import Answer, Recommendation

SETTLED = ("faster", "cheaper")  # the verdicts that name a winner with confidence


@dataclass(frozen=True)
class PointAgreement:
    """One point both sweeps answered: each winner and verdict, whether they agree and why."""

    workload: dict[str, Any]
    epochs: int
    first: Answer
    second: Answer
    agrees: bool
    why: str


@dataclass(frozen=True)
class Repetition:
    """Two sweeps' answers compared: per point both answered, and the points only one did."""

    points: tuple[PointAgreement, ...]
    only_first: tuple[tuple[dict[str, Any], int], ...]
    only_second: tuple[tuple[dict[str, Any], int], ...]
    delta: float

    @property
    def summary(self) -> str:
        agreeing = sum(point.agrees for point in self.points)
        if not self.points:
            return "the sweeps answered no point in common"
        return f"the answers agree at {agreeing} of {len(self.points)} points both sweeps answered"


def repetition(first: Recommendation, second: Recommendation, delta: float = RACE_DELTA) -> Repetition:
    """Compare the answers of two sweeps of one grid (:func:`sweeper.results.recommend.recommend` of each)."""
    keyed = {_key(a): a for a in second.answers}
    points = []
    for answer in first.answers:
        other = keyed.get(_key(answer))
        if other is not None:
            agrees, why = _agreement(answer, other, delta)
            points.append(PointAgreement(answer.workload, answer.epochs, answer, other, agrees, why))
    firsts = {_key(a) for a in first.answers}
    return Repetition(
        points=tuple(points),
        only_first=tuple((a.workload, a.epochs) for a in first.answers if _key(a) not in keyed),
        only_second=tuple((a.workload, a.epochs) for a in second.answers if _key(a) not in firsts),
        delta=delta,
    )


def _agreement(first: Answer, second: Answer, delta: float) -> tuple[bool, str]:
    if first.winner.label == second.winner.label:
        return True, "the same winner"
    for settled, other in ((first, second), (second, first)):
        if settled.verdict in SETTLED and not _within(other, settled.winner.label, delta):
            return False, f"{settled.winner.label}, settled in one, is more than {delta:.0%} slower in the other"
    if first.verdict not in SETTLED and second.verdict not in SETTLED:
        return True, "neither settled"
    return True, f"the settled winner is within {delta:.0%} of the other's"


def _within(answer: Answer, label: str, delta: float) -> bool:
    """Whether configuration ``label`` was measured in ``answer``'s sweep within ``delta`` of its winner."""
    median_s = next((arm.median_s for arm in answer.arms if arm.label == label), None)
    return median_s is not None and median_s <= answer.winner.median_s * (1 + delta)


def _key(answer: Answer) -> tuple[tuple[tuple[str, Any], ...], int]:
    """A point of the grid, whatever the sweep is called."""
    return tuple(sorted((k, v) for k, v in answer.workload.items() if k != "sweep")), answer.epochs

"""The shapes another grid would measure, as the what-if model takes them, and how far each lies outside the sweep.

Every Spark and Dask launch of the grid's plan at each ``replicas`` point: its executors, the grid's threads per
fit and batch size, and the training rows of its fraction (measured by the sweep at that fraction, else scaled
from the sweep's largest measured fraction of the same dataset).
"""

from __future__ import annotations

import pandas as pd

from sweeper.errors import UserError
from sweeper.planning.plan import Plan, Point
from sweeper.results.predict.model import Shape
from sweeper.store.validity import MAX_ROWS

PREDICTED_ENGINES = ("spark", "dask")
RANGES = {  # the name an extrapolation is reported under -> what of a shape it measures
    "epochs": lambda s: s.epochs,
    "training rows": lambda s: s.n_train,
    "fits": lambda s: s.n_fits,
    "slots": lambda s: s.slots,
    "executors": lambda s: s.executors,
    "cores per executor": lambda s: s.cores_per_executor,
    "nodes": lambda s: s.nodes,
}


def plan_targets(plan: Plan, points: pd.DataFrame) -> list[tuple[int, Point, Shape]]:
    """The plan's Spark and Dask launches x replicas points, with the rows each would train on: (launch index,
    point, shape)."""
    workload = plan.grid.workload
    shapes = []
    for launch in plan.launches:
        if launch.engine not in PREDICTED_ENGINES:
            continue
        for point in plan.points.get(launch.index, ()):
            if point.mode != "replicas":
                continue
            shapes.append(
                (
                    launch.index,
                    point,
                    Shape(
                        engine=launch.engine,
                        nodes=launch.nodes,
                        cores_per_executor=launch.cores_per_executor,
                        executors=launch.executors,
                        executor_memory_gib=launch.executor_memory_mib / 1024,
                        threads_per_fit=workload.threads_per_fit,
                        epochs=point.epochs,
                        n_train=training_rows(points, workload.dataset.name, point.fraction),
                        n_fits=plan.fits(point.mode),
                    ),
                )
            )
    if not shapes:
        raise UserError(f"{plan.grid.path}: the grid has no Spark or Dask launch at a replicas point to predict")
    return shapes


def training_rows(points: pd.DataFrame, dataset: str, fraction: float) -> int:
    """The rows a batch of ``dataset`` at ``fraction`` trains on, from what the sweep measured."""
    same = points[points["dataset"] == dataset]
    if same.empty:
        measured = ", ".join(sorted(points["dataset"].astype(str).unique()))
        raise UserError(f"the sweep measured dataset(s) {measured}, not {dataset}: predictions need its dataset")
    at_fraction = same[same["fraction"] == fraction]
    if not at_fraction.empty:
        return int(at_fraction["n_train"].median())
    largest = same[same["fraction"] == same["fraction"].max()]
    measured_rows, measured_fraction = float(largest["n_train"].median()), float(largest["fraction"].iloc[0])
    rows = measured_rows * fraction / measured_fraction
    if not rows <= MAX_ROWS:  # a stored fraction near 0 (the store's check allows any in (0, 1]): scaled past any data
        raise UserError(
            f"fraction {fraction:g} of {dataset}: {rows:.3g} training rows, scaled from the sweep's "
            f"{measured_rows:g} rows at fraction {measured_fraction:g}, more than any dataset holds ({MAX_ROWS:g}); "
            "predict a fraction the sweep measured"
        )
    return round(rows)


def outside(shape: Shape, measured: list[Shape]) -> list[str]:
    """What of ``shape`` lies outside the range its engine was measured over (empty: an interpolation)."""
    mine = [m for m in measured if m.engine == shape.engine]
    if not mine:
        return ["engine"]
    found = []
    for name, value in RANGES.items():
        values = [value(m) for m in mine]
        if not min(values) <= value(shape) <= max(values):
            found.append(name)
    return found

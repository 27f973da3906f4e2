"""The shapes another grid would measure, as the what-if model takes them, and how far each lies outside the sweep.

Every launch of a predicted engine (Spark, Dask, Ray: :data:`sweeper.engines.PREDICTED_ENGINES`) of the grid's plan
at each ``replicas`` point: its executors, the grid's threads per fit and batch size, and the training rows of its
fraction (measured by the sweep at that fraction, else scaled from the sweep's largest measured fraction of the same
dataset).
"""

from __future__ import annotations

import pandas as pd

from sweeper.engines import PREDICTED_ENGINES
from sweeper.errors import UserError
from sweeper.planning.plan import Plan, Point
from sweeper.results.predict.model import Shape, terms_of
from sweeper.store.validity import MAX_ROWS

MAX_PREDICTIONS = 10_000  # launch x point pairs one `predict --grid` predicts and prints
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
    """The plan's launches of predicted engines x replicas points, with the rows each would train on: (launch index,
    point, shape); at most :data:`MAX_PREDICTIONS` of them (a grid with more: exit 2, nothing predicted)."""
    workload = plan.grid.workload
    launches = [launch for launch in plan.launches if launch.engine in PREDICTED_ENGINES]
    asked = sum(point.mode == "replicas" for launch in launches for point in plan.points.get(launch.index, ()))
    if asked > MAX_PREDICTIONS:
        raise UserError(
            f"{plan.grid.path}: {asked:,} Spark and Dask launch x replicas point pairs to predict; at most "
            f"{MAX_PREDICTIONS:,}: shorten an axis, narrow it with exclude/only, or split the grid"
        )
    rows: dict[float, int] = {}  # training rows per fraction, looked up once
    shapes = []
    for launch in launches:
        for point in plan.points.get(launch.index, ()):
            if point.mode != "replicas":
                continue
            if point.fraction not in rows:
                rows[point.fraction] = _training_rows(points, workload.dataset.name, point.fraction)
            shape = Shape(
                engine=launch.engine,
                nodes=launch.nodes,
                cores_per_executor=launch.cores_per_executor,
                executors=launch.executors,
                executor_memory_gib=launch.executor_memory_mib / 1024,
                threads_per_fit=workload.threads_per_fit,
                epochs=point.epochs,
                n_train=rows[point.fraction],
                n_fits=plan.fits(point.mode),
            )
            shapes.append((launch.index, point, shape))
    if not shapes:
        raise UserError(f"{plan.grid.path}: the grid has no Spark or Dask launch at a replicas point to predict")
    return shapes


def _training_rows(points: pd.DataFrame, dataset: str, fraction: float) -> int:
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


Ranges = dict[str, tuple[float, float]]  # a name of RANGES -> (smallest, largest) measured


def measured_ranges(points: pd.DataFrame) -> dict[str, Ranges]:
    """Per engine, the range of each of :data:`RANGES` over its medians (:func:`~.model.medians`)."""
    columns = {
        "epochs": points["epochs"],
        "training rows": points["n_train"],
        "fits": points["n_fits"],
        "slots": pd.Series(terms_of(points).slots, index=points.index),
        "executors": points["executors"],
        "cores per executor": points["cores_per_executor"],
        "nodes": points["nodes"],
    }
    frame = pd.DataFrame({name: values.astype(float) for name, values in columns.items()})
    grouped = frame.groupby(points["engine"].astype(str).to_numpy(), sort=True)
    low, high = grouped.min(), grouped.max()
    return {
        str(engine): {name: (float(low.at[engine, name]), float(high.at[engine, name])) for name in RANGES}
        for engine in low.index
    }


def outside(shape: Shape, ranges: dict[str, Ranges]) -> list[str]:
    """What of ``shape`` lies outside the range its engine was measured over (empty: an interpolation)."""
    mine = ranges.get(shape.engine)
    if mine is None:
        return ["engine"]
    return [name for name, value in RANGES.items() if not mine[name][0] <= value(shape) <= mine[name][1]]

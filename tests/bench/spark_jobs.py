"""Spark's batch: one job per fit vs one job per slot (the sweeper's): ``python -m tests.bench.spark_jobs``.

joblibspark runs each joblib dispatch as a Spark job. Dispatched one fit at a time (joblib's default: its
auto-batching groups only tasks under 0.2 s), a batch of 8 fits on 2 slots is 8 jobs, 4 after one another on each
slot; the sweeper hands each slot its share of alike fits as one dispatch
(:func:`sweeper.launch.joblib_batch.dispatch_groups`). Here the same warm local launch (2 executors x 1 core, the
sweeper's own) runs the same batch both ways, alternating, and prints each batch's wall time and its time outside
the fits (wall minus the fits' own time spread over the slots).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from sweeper.config.grid import Dataset
from sweeper.launch import joblib_batch
from sweeper.launch.registry import starter
from sweeper.workload.data import load
from sweeper.workload.tasks import FitTask
from tests.support import launches
from tests.support.batches import replicas

SLOTS = 2


def one_a_fit(tasks: list[FitTask], slots: int) -> list[list[FitTask]]:
    """Every fit a dispatch of its own: one Spark job per fit."""
    return [[task] for task in tasks]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--fits", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=60)
    args = parser.parse_args()
    data = load(Dataset("digits"))
    tasks = replicas(data, fits=args.fits, epochs=args.epochs, hidden=(64,), exact_epochs=True)
    ways = {"one job per fit": one_a_fit, "one job per slot": joblib_batch.dispatch_groups}
    measured: dict[str, list[tuple[float, float]]] = {way: [] for way in ways}
    with tempfile.TemporaryDirectory(prefix="bench-spark-jobs-") as scratch:
        launch = launches.launch("spark", executors=SLOTS, executor_memory_mib=1024)
        context = launches.context(Path(scratch), environment={"OMP_NUM_THREADS": "1"})
        with starter("spark", "local")(launch, context) as session:
            session.run_batch(tasks, data)  # warm-up
            try:
                for _ in range(args.rounds):
                    for way, grouping in ways.items():
                        joblib_batch.dispatch_groups = grouping  # restored below
                        started = time.perf_counter()
                        results = session.run_batch(tasks, data)
                        wall_s = time.perf_counter() - started
                        measured[way].append((wall_s, wall_s - sum(r.fit_s for r in results) / SLOTS))
                        print(f"{way}: batch {wall_s:.2f} s, outside the fits {measured[way][-1][1]:.2f} s", flush=True)
            finally:
                joblib_batch.dispatch_groups = ways["one job per slot"]
    for way, times in measured.items():
        batch_s, outside_s = statistics.median(t[0] for t in times), statistics.median(t[1] for t in times)
        print(f"{way}: median batch {batch_s:.2f} s, outside the fits {outside_s:.2f} s")


if __name__ == "__main__":
    main()

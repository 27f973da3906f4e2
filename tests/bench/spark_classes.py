"""Spark's local start with and without the class archive: ``python -m tests.bench.spark_classes [--rounds N]``.

One-launch Spark sweeps through the CLI (2 executors x 1 core, digits, 2 epochs, one trial), alternating a grid with
``-Xshare:off`` in both ``extraJavaOptions`` and one without, each into a fresh store, with a cache of their own (its
archive written by a first, untimed sweep). Prints each sweep's start, warm-up and whole run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from sweeper import load_results

OFF = {"spark.driver.extraJavaOptions": "-Xshare:off", "spark.executor.extraJavaOptions": "-Xshare:off"}


def grid(store: Path, archive: bool) -> dict[str, Any]:
    return {
        "name": "classes",
        "cluster": {"manager": "local", "nodes": 1, "cores_per_node": 2, "memory_per_node": "8GiB"},
        "sizing": {"rule": "report", "cores_per_executor": [1], "reserve": {"cores": 0, "memory": "1GiB"},
                   "application_master": 0},
        "engines": ["spark"],
        "workload": {"dataset": "digits", "model": {"hidden_layer_sizes": [16]}, "epochs": [2], "trials": 1},
        "baseline": False,
        "store": str(store),
        **({} if archive else {"spark_conf": OFF}),
    }  # fmt: skip


def sweep(directory: Path, archive: bool, name: str) -> tuple[float, float, float]:
    """(start s, warm-up s, whole run s) of one sweep."""
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(grid(directory / name, archive)))
    environment = {**os.environ, "XDG_CACHE_HOME": str(directory / "cache")}
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "sweeper", "run", str(path)], check=True, capture_output=True, env=environment
    )
    whole_s = time.perf_counter() - started
    row = load_results(directory / name).iloc[0]
    return float(row["cluster_start_s"]), float(row["warmup_s"]), whole_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-classes-") as temporary:
        directory = Path(temporary)
        sweep(directory, True, "first")  # writes the archive
        for index in range(args.rounds):
            for archive in (False, True):
                start_s, warmup_s, whole_s = sweep(directory, archive, f"{index}-{archive}")
                label = "with the archive   " if archive else "without the archive"
                print(f"{label} start {start_s:.2f} s, warm-up {warmup_s:.2f} s, run {whole_s:.2f} s", flush=True)


if __name__ == "__main__":
    main()

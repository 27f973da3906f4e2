"""Starts paid once (#38): a Spark launch's start on the namespaced YARN cluster, the first against the later ones.

A fresh cluster (tests/support/ns_cluster.py: 2 nodes, HDFS and YARN, empty NodeManager caches), healthy as
``sweeper check`` wants it (its nodes' /etc/hosts without Debian's ``127.0.1.1 <own name>`` line, which the check
fails: with it, an executor that fetches a broadcast from another node's executor is refused and retries for 15 s
in the warm-up; BENCHMARKS.md, "Warm-ups of 16 s"), takes
``sweeps`` one-configuration Spark sweeps of the namespaced sweep's grid (tests/test_ns_sweep.py: 3 executors x 1
core over both nodes, one trial), one after another, each into a store of its own. The first stages Spark's jars,
pyspark's zips and the packed environment on HDFS (``staging_s``, apart from the start) and its containers
localize them on each node; the later ones find them staged and in the nodes' public caches. A start is the row's
``cluster_start_s``: from the launch's beginning until its executors registered.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

SWEEPS = 3


def starts_grid(directory: Path) -> Path:
    """The namespaced sweep's grid, Spark only: one configuration, one trial."""
    from tests.test_ns_sweep import ns_grid

    path = ns_grid(directory)
    grid = yaml.safe_load(path.read_text())
    grid["name"], grid["engines"] = "yarn-starts", ["spark"]
    path.write_text(yaml.safe_dump(grid, sort_keys=False))
    return path


def yarn_starts(sweeps: int, scratch: Path) -> dict[str, Any]:
    """``sweeps`` Spark sweeps on a fresh namespaced cluster: each one's start, staging and warm-up seconds, and the
    later starts' median against the first's; ``unavailable`` (and nothing else) where the cluster cannot start."""
    from sweeper import load_results
    from tests.support.ns_cluster import namespaced_yarn, unavailable, without_loopback_names
    from tests.test_ns_sweep import on_edge

    reason = unavailable()
    if reason:
        return {"unavailable": reason}
    grid = starts_grid(scratch)
    launches = []
    with namespaced_yarn(scratch / "cluster") as cluster, without_loopback_names(cluster):
        for sweep in range(1, sweeps + 1):
            store = scratch / f"store-{sweep}"
            began = time.monotonic()
            argv = [sys.executable, "-m", "sweeper", "run", str(grid), "--store", str(store), "--skip-check"]
            done = on_edge(cluster, argv)
            if done.returncode != 0:
                raise RuntimeError(f"sweep {sweep} exited {done.returncode}: {done.stderr[-3000:]}")
            row = load_results(store).iloc[0]
            launches.append(
                {
                    "start_s": float(row["cluster_start_s"]),
                    "staging_s": float(row["staging_s"] or 0.0),
                    "warmup_s": float(row["warmup_s"]),
                    "sweep_s": time.monotonic() - began,
                }
            )
        cluster_start_s = cluster.start_s
    return {"cluster_start_s": cluster_start_s, **start_figures(launches)}


def start_figures(launches: Sequence[Mapping[str, float]]) -> dict[str, Any]:
    """The first launch's start, the later ones' median and their ratio (None with fewer than 2 launches).

    >>> start_figures([{"start_s": 60.0}, {"start_s": 8.0}, {"start_s": 10.0}])["later_vs_first"]
    0.15
    """
    starts = [launch["start_s"] for launch in launches]
    later_s = statistics.median(starts[1:]) if len(starts) > 1 else None
    return {
        "launches": list(launches),
        "first_start_s": starts[0] if starts else None,
        "later_start_s": later_s,
        "later_vs_first": later_s / starts[0] if later_s is not None and starts[0] > 0 else None,
    }


def yarn_starts_lines(found: Mapping[str, Any]) -> list[str]:
    """The bench's paragraph on it."""
    if not found:
        return []
    if "unavailable" in found:
        return [f"- **Spark starts on the namespaced YARN cluster**: not measured ({found['unavailable']})."]
    each = ", ".join(
        f"{launch['start_s']:.1f} s (staging {launch['staging_s']:.1f} s, warm-up {launch['warmup_s']:.1f} s)"
        for launch in found["launches"]
    )
    return [
        f"- **Spark starts on the namespaced YARN cluster** (tests/bench/yarn_starts.py: {len(found['launches'])} "
        f"one-launch Spark sweeps of 3 executors over 2 nodes, one after another on a fresh cluster without "
        f"127.0.1.1 names, started in "
        f"{found['cluster_start_s']:.0f} s): starts {each}; a later launch's start (median) "
        f"{found['later_start_s']:.1f} s against the first's {found['first_start_s']:.1f} s: "
        f"{found['later_vs_first']:.2f}x."
    ]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tests.bench.yarn_starts [--sweeps N]``: this piece alone (root), its paragraph and figures."""
    parser = argparse.ArgumentParser(prog="python -m tests.bench.yarn_starts", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sweeps", type=int, default=SWEEPS, help=f"one-launch sweeps, at least 2 (default {SWEEPS})")
    args = parser.parse_args(argv)
    if args.sweeps < 2:
        parser.error("--sweeps must be at least 2")
    with tempfile.TemporaryDirectory(prefix="sweeper-bench-yarn-starts-") as scratch:
        found = yarn_starts(args.sweeps, Path(scratch))
    print("\n".join(yarn_starts_lines(found)))
    print(json.dumps(found, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

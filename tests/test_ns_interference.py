"""A hog inside one node of the namespaced YARN cluster is attributed to that node (issue #34).

The nodes share this machine's kernel, so ``/proc/stat`` counts every node alike; each node's busy time is read
from what its own ``/proc`` shows (:func:`sweeper.workload.usage.node_busy_s`). A shell busy loop runs inside
sw-node2 (the node with fewer daemons: sw-node1 also holds the NameNode and ResourceManager) for the whole of a
one-launch Dask sweep of 3 workers over both nodes; its rows are disturbed, and the worst node, the one whose
figures the row holds, is sw-node2: its share of others' CPU is above sw-node1's (whose own daemons, and on a busy
machine whatever else runs, count there as others too, so sw-node1 is not asserted quiet).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
import yaml

from sweeper import load_results
from tests.support.busy import busy_loop_in_node
from tests.support.ns_cluster import NsCluster, init_pid
from tests.test_ns_sweep import ns_grid, on_edge

pytestmark = [pytest.mark.integration, pytest.mark.yarn]

HOG_HOST = "sw-node2"
LIMIT = 0.1  # the hog took 0.40 core of sw-node2's 2 worker cores (share 0.23) with this machine at load 7


def hog_grid(tmp: Path) -> Path:
    """The ns sweep's grid (3 Dask workers x 1 core over both nodes), Dask only: 2 trials of 3 fits long enough for
    the readings (> MIN_SPAN_S), nothing taken again, and its own interference limit."""
    path = ns_grid(tmp)
    grid = yaml.safe_load(path.read_text())
    grid["name"], grid["engines"] = "ns-hog", ["dask"]
    grid["workload"] = {
        "dataset": "digits", "model": {"hidden_layer_sizes": [64]}, "epochs": [150], "exact_epochs": True,
        "trials": 2, "remeasure_disturbed": 0, "interference_limit": LIMIT,
    }  # fmt: skip
    path.write_text(yaml.safe_dump(grid, sort_keys=False))
    return path


def test_a_hog_inside_one_node_is_attributed_to_that_node(ns_yarn: NsCluster, tmp_path: Path) -> None:
    node = next(member for member in ns_yarn.members.values() if member.host == HOG_HOST)
    node_init = init_pid(node)
    with busy_loop_in_node(node_init) as hog:
        assert os.stat(f"/proc/{hog.pid}/ns/pid").st_ino == os.stat(f"/proc/{node_init}/ns/pid").st_ino
        started_s, hog_start_s = time.monotonic(), sum(hog.cpu_times()[:2])
        result = on_edge(ns_yarn, [sys.executable, "-m", "sweeper", "run", str(hog_grid(tmp_path)), "--skip-check"])
        hog_cores = (sum(hog.cpu_times()[:2]) - hog_start_s) / (time.monotonic() - started_s)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-4000:]
    frame = load_results(tmp_path / "store")
    figures = frame[
        ["trial", "fit_wall_s", "interference_cpu_share", "interference_host", "disturbed", "cluster_start_s"]
    ]
    print(f"\nhog on {HOG_HOST}: {hog_cores:.2f} cores over the sweep; rows {figures.to_dict('records')}")
    assert set(frame["status"]) == {"ok"} and len(frame) == 2, frame[["status", "error"]].to_dict("records")
    assert set(frame["interference_host"]) == {HOG_HOST}, figures.to_dict("records")
    assert frame["disturbed"].all(), figures.to_dict("records")

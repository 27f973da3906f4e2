"""``manager: standalone``: sweeps on a Spark master and a Dask scheduler that were already running.

The clusters are the session's ``existing_clusters`` (tests/conftest.py, tests/support/standalone_clusters.py);
the engine contract on them (granted, fits, the clusters left running) is in tests/test_engine_contract.py.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from sweeper.config import load as grid_file
from sweeper.planning.plan import make_plan
from sweeper.run import runner
from tests.conftest import minimal_grid
from tests.support.figures import assert_resource_figures
from tests.support.standalone_clusters import StandaloneClusters

pytestmark = pytest.mark.integration


def test_a_sweep_runs_on_existing_clusters_and_leaves_them_running(
    existing_clusters: StandaloneClusters, tmp_path: Path
) -> None:
    master, scheduler = existing_clusters.spark_master, existing_clusters.dask_scheduler
    spec = minimal_grid(name="existing", store=str(tmp_path / "store"))
    spec["cluster"] = {
        "manager": "standalone", "nodes": 1, "cores_per_node": 2, "memory_per_node": "6GiB",
        "spark_master": master, "dask_scheduler": scheduler,
    }  # fmt: skip
    spec["workload"] = {"dataset": "digits", "epochs": [5], "trials": 1}
    spec["baseline"] = False
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(spec))
    plan = make_plan(grid_file.load(path))
    assert [(x.executors, x.cores_per_executor, x.executor_memory_mib) for x in plan.launches] == [(2, 1, 1024)] * 2
    result = runner.run(plan, store=tmp_path / "store")
    assert [(r["engine"], r["status"]) for r in result.rows] == [("spark", "ok"), ("dask", "ok")], result.rows
    assert all(r["granted_executors"] == 2 and r["manager"] == "standalone" for r in result.rows)
    assert_resource_figures(pd.DataFrame(result.rows))
    assert existing_clusters.dask_workers() == 2  # the clusters are the user's: still there after the sweep


def test_a_cluster_smaller_than_the_plan_fails_the_launch(
    existing_clusters: StandaloneClusters, tmp_path: Path
) -> None:
    master, scheduler = existing_clusters.spark_master, existing_clusters.dask_scheduler
    spec = minimal_grid(name="too-big", store=str(tmp_path / "store"))
    spec["cluster"] = {
        "manager": "standalone", "nodes": 2, "cores_per_node": 2, "memory_per_node": "6GiB",
        "spark_master": master, "dask_scheduler": scheduler,
    }  # fmt: skip
    spec["workload"] = {"dataset": "digits", "epochs": [5], "trials": 1}
    spec["baseline"] = False
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(spec))
    plan = make_plan(grid_file.load(path))
    # the wait for executors and workers that will never come is kept short
    result = runner.run(plan, store=tmp_path / "store", start_timeout_s=10)
    assert {r["status"] for r in result.rows} == {"failed"}
    errors = " ".join(str(r["error"]) for r in result.rows)
    assert "planned 4 x 1 cores" in errors or "of 4" in errors or "4 x 1" in errors, errors

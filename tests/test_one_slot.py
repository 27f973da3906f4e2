"""A launch with a single slot still runs its fits on the cluster, not in the driver."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sweeper.config.grid import Dataset
from sweeper.launch.base import LaunchContext
from sweeper.launch.registry import starter
from sweeper.planning.plan import Launch
from sweeper.workload.data import load
from tests.support.batches import replicas
from tests.support.leftovers import assert_no_launch_processes

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("engine", ["dask", "spark"])
def test_one_executor_of_one_core_runs_the_fits_in_a_worker_process(engine: str, tmp_path: Path) -> None:
    # joblib runs a Parallel call with one effective job in the calling process, whatever the backend
    data = load(Dataset("digits"), max_train_rows=300)
    launch = Launch(0, engine, "local", 1, "report", 1, 1, 1024, 384, (1,))
    context = LaunchContext(run_dir=tmp_path, environment={}, threads_per_fit=1)
    tasks = replicas(data, epochs=3, hidden=(8,))
    with starter(engine, "local")(launch, context) as session:
        results = session.run_batch(tasks, data)
    assert len(results) == 2
    assert all(result.pid != os.getpid() for result in results)
    assert_no_launch_processes()

"""Engine ray: refused with the install hint when Ray is missing; on local, a cluster of the launch's shape
whose pool of actors lives from batch to batch, takes the fit environment, is aborted, trains one model
across its nodes (data-parallel) and leaves nothing.

The engine contract (tests/test_engine_contract.py) covers ray on local and standalone like every engine.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import pytest

from sweeper.launch.base import Granted
from sweeper.launch.registry import starter
from sweeper.workload.data import Data
from sweeper.workload.fit import FitResult
from sweeper.workload.tasks import FitTask, make_batch
from tests.support import launches
from tests.support.batches import replicas
from tests.support.ray_cluster import assert_no_ray_processes

# Ray missing, simulated: the interpreter runs the sweeper with `import ray` failing as it does when not installed.
WITHOUT_RAY = "import sys; sys.modules['ray'] = None; from sweeper.cli import main; sys.exit(main())"


def test_a_grid_with_ray_is_refused_with_the_install_hint_when_ray_is_missing(write_grid: Any, tmp_path: Path) -> None:
    import subprocess
    import sys

    grid = write_grid(
        {
            "name": "no-ray",
            "cluster": {"manager": "local", "nodes": 1, "cores_per_node": 2, "memory_per_node": "8GiB"},
            "sizing": {"cores_per_executor": [1], "reserve": {"cores": 0, "memory": "1GiB"}, "application_master": 0},
            "engines": ["ray"],
            "baseline": False,
            "workload": {"dataset": "digits", "epochs": [5], "trials": 1},
            "store": str(tmp_path / "store"),
        }
    )
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_RAY, "run", str(grid)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 2, done.stdout + done.stderr
    said = " ".join(done.stderr.split())  # its lines unwrapped
    assert "engine 'ray' on 'local' needs 'sweeper[ray]', which is not installed" in said, done.stderr
    assert "pip install 'sweeper[ray]'" in said
    assert "Traceback" not in done.stdout + done.stderr
    # no row was written
    assert not list((tmp_path / "store").rglob("*.parquet"))


def _one_model_across_the_nodes(session: Any, digits: Data) -> None:
    """Data-parallel: a trainer on each node's shard, the shards put once for the launch, only weights travel."""

    def batch(epochs: int) -> list[FitTask]:
        return make_batch(
            "data-parallel", {"hidden_layer_sizes": (32,), "solver": "adam"}, epochs, 0, 1, n_train=digits.n_train,
            labels=digits.y_train, folds=2, param_grid=(), seed=0, exact_epochs=False, threads_per_fit=1, shards=2,
        )  # fmt: skip

    (result,) = session.run_batch(batch(30), digits)
    shipped = session._shards
    assert len({node for node, _, _ in shipped.parts}) == 2  # one shard on each worker node
    assert result.shards == 2 and result.rounds == 30 and result.accuracy > 0.8
    assert result.comm_bytes_per_round is not None
    assert 0 < result.comm_bytes_per_round < (digits.X_train.nbytes + digits.y_train.nbytes) / 4
    assert session.run_batch(batch(5), digits)[0].rounds == 5 and session._shards is shipped


def _in_a_thread(session: Any, tasks: list[Any], data: Data) -> dict[str, Any]:
    """Run a batch as the runner does (in a helper thread); its results or its error."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["results"] = session.run_batch(tasks, data)
        except Exception as error:
            out["error"] = error

    thread = threading.Thread(target=run)
    thread.start()
    out["thread"] = thread
    return out


@pytest.mark.integration
def test_a_local_ray_launch_keeps_its_actors_sets_the_fit_environment_aborts_shards_and_leaves_nothing(
    digits: Data, tmp_path: Path
) -> None:
    launch = launches.launch("ray", executors=2, executor_memory_mib=512)
    context = launches.context(tmp_path / "run", environment={"OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "7"})
    tasks = replicas(digits)
    slow = replicas(digits, fits=40, epochs=200, hidden=(128, 128))
    with starter("ray", "local")(launch, context) as session:
        assert session.granted == Granted(2, 1, 512)
        first: list[FitResult] = session.run_batch(tasks, digits)
        assert all(r.environment["PYTHONHASHSEED"] == "7" for r in first)  # set on the nodes, inherited by the actors
        second = _in_a_thread(session, tasks, digits)
        second["thread"].join()
        actors = {r.pid for r in first}
        assert len(actors) == 2 and {r.pid for r in second["results"]} == actors  # one pool for the launch
        aborted = _in_a_thread(session, slow, digits)  # minutes of fits, unless aborted
        while aborted[
            "thread"
        ].is_alive():  # an abort before the batch took the pool would miss it: again until it ends
            session.abort()
            aborted["thread"].join(0.2)
        assert "error" in aborted, "the batch was not aborted"
        assert {r.pid for r in session.run_batch(tasks, digits)}.isdisjoint(actors)
        _one_model_across_the_nodes(session, digits)
    assert_no_ray_processes()
    head_log = (tmp_path / "run" / "ray-0" / "ray-head.log").read_text()
    temp_dir = re.search(r"(/\S*sweeper-ray-[^/\s]+)/session_", head_log)
    assert temp_dir and not Path(temp_dir[1]).exists()

"""Data-parallel training: parameter averaging, P = 1 equivalence, shards shipped once per launch."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sweeper.launch.registry import starter
from sweeper.workload.averaging import Weights, average, shard_rows, train_in_process
from sweeper.workload.data import Data
from sweeper.workload.tasks import make_batch
from tests.conftest import REPO
from tests.support import launches
from tests.support.batches import recipe_with
from tests.support.leftovers import assert_no_launch_processes

PARAMS = {"hidden_layer_sizes": (32,), "solver": "adam"}


def test_one_shard_is_exactly_a_plain_partial_fit_loop(digits: Data) -> None:
    from sklearn.neural_network import MLPClassifier

    outcome = train_in_process(digits, PARAMS, epochs=7, local_epochs=1, seed=3)
    plain = MLPClassifier(random_state=3, **PARAMS)
    for _ in range(7):
        plain.partial_fit(digits.X_train, digits.y_train, classes=np.unique(digits.y_train))
    assert len(outcome.round_s) == 7 and outcome.shards == 1
    for ours, theirs in zip(
        outcome.weights.coefs + outcome.weights.intercepts, plain.coefs_ + plain.intercepts_, strict=True
    ):
        assert np.array_equal(ours, theirs)


def test_averaging_weighs_by_shard_size() -> None:
    one = Weights((np.array([[0.0]]),), (np.array([0.0]),))
    two = Weights((np.array([[3.0]]),), (np.array([6.0]),))
    mean = average([(one, 2), (two, 1)])
    assert mean.coefs[0][0, 0] == pytest.approx(1.0) and mean.intercepts[0][0] == pytest.approx(2.0)
    assert average([(two, 5)]) is two


def test_shards_are_stratified_disjoint_and_cover_every_row(digits: Data) -> None:
    parts = shard_rows(digits.y_train, 3, seed=0)
    rows = np.concatenate(parts)
    assert sorted(rows.tolist()) == list(range(digits.n_train))
    for part in parts:
        assert set(np.unique(digits.y_train[part])) == set(range(10))


def test_a_spark_round_unpickled_in_a_worker_keeps_its_trainer_for_the_next_round(digits: Data) -> None:
    """As in an executor's Python worker: two rounds' closures, each unpickled, share one trainer."""
    from pyspark import cloudpickle

    from sweeper.launch.spark.shards import _spark_round

    classes = np.unique(digits.y_train)
    rounds = [cloudpickle.dumps(_spark_round("t", PARAMS, classes, 0, 1, None)) for _ in range(2)]
    code = (
        "import pickle, sys\n"
        "import numpy as np\n"
        "from sweeper.launch.spark import shards\n"
        "payload = pickle.loads(sys.stdin.buffer.read())\n"
        "seen = []\n"
        "for blob in payload['rounds']:\n"
        "    run = pickle.loads(blob)\n"
        "    list(run(0, iter([(payload['X'], payload['y'])])))\n"
        "    seen.append(id(shards._TRAINERS[('t', 0)]))\n"
        "print(len(shards._TRAINERS), len(set(seen)))\n"
    )
    payload = pickle.dumps({"rounds": rounds, "X": digits.X_train[:200], "y": digits.y_train[:200]})
    out = subprocess.run([sys.executable, "-c", code], input=payload, capture_output=True, timeout=120, cwd=REPO)
    assert out.returncode == 0, out.stderr.decode()
    assert out.stdout.decode().split() == ["1", "1"]  # one trainer, made in round 1 and used again in round 2


@pytest.mark.integration
@pytest.mark.parametrize("engine", ["dask", "spark"])
def test_data_parallel_on_a_real_launch_ships_shards_once_and_only_weights_travel(
    engine: str, digits: Data, tmp_path: Path
) -> None:
    context = launches.context(tmp_path, environment={})
    recipe = recipe_with()
    with starter(engine, "local")(launches.launch(engine, executor_memory_mib=1024), context) as session:
        first = session.run_batch(
            make_batch(recipe, "data-parallel", PARAMS, 30, 0, 1, labels=digits.y_train, shards=2),
            digits,
        )
        shipped = session._shards  # type: ignore[attr-defined]
        second = session.run_batch(
            make_batch(recipe, "data-parallel", PARAMS, 5, 1, 1, labels=digits.y_train, shards=2),
            digits,
        )
        assert session._shards is shipped  # type: ignore[attr-defined]  # the same shards, not shipped again
        if engine == "spark":
            assert shipped.rdd.is_cached and shipped.rdd.getNumPartitions() == 2
        else:
            shards, _ = shipped  # Dask keeps its shards with the number of aborts before they were shipped
            assert len(shards.parts) == 2 and len({worker for worker, _, _ in shards.parts}) == 2
    (result,) = first
    assert result.shards == 2 and result.rounds == 30 and result.epochs_run == 30
    assert result.accuracy > 0.8  # 2 averaged shards of digits reach 0.86 after 30 rounds (1 shard: 0.91)
    data_bytes = digits.X_train.nbytes + digits.y_train.nbytes
    # a round moves the weights down to each shard and back, far less than the training data
    assert result.comm_bytes_per_round is not None and 0 < result.comm_bytes_per_round < data_bytes / 4
    assert second[0].rounds == 5
    assert_no_launch_processes()


@pytest.mark.integration
def test_a_sweep_of_every_engine_and_mode_is_reported_side_by_side(tmp_path: Path) -> None:
    import yaml

    from sweeper import load_results
    from sweeper.config import load as grid_file
    from sweeper.planning.plan import make_plan
    from sweeper.results.report import write_report
    from sweeper.run import runner

    spec = {
        "name": "everything",
        "cluster": {"manager": "local", "nodes": 1, "cores_per_node": 2, "memory_per_node": "8GiB"},
        "sizing": {"cores_per_executor": [1], "reserve": {"cores": 0, "memory": "1GiB"}, "application_master": 0},
        "engines": ["spark", "dask", "spark-mllib"],
        "workload": {"dataset": "digits", "mode": ["replicas", "data-parallel"], "epochs": [5], "trials": 1},
    }
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(spec))
    result = runner.run(make_plan(grid_file.load(path)), store=tmp_path / "store")
    assert {row["status"] for row in result.rows} == {"ok"}, [row["error"] for row in result.rows]
    frame = load_results(tmp_path / "store")
    seen = set(zip(frame["engine"], frame["mode"], strict=True))
    assert seen == {
        (engine, mode) for engine in ("local", "spark", "dask") for mode in ("replicas", "data-parallel")
    } | {("spark-mllib", "data-parallel")}
    parallel = frame[(frame["mode"] == "data-parallel") & frame["engine"].isin(["spark", "dask"])]
    assert (parallel["shards"] == 2).all() and (parallel["rounds"] == parallel["epochs"]).all()
    written = write_report(tmp_path / "store", tmp_path / "report", sweep="everything")
    markdown = written[1].read_text()
    for engine in ("spark", "dask", "spark-mllib"):
        assert engine in markdown
    assert "COST" in markdown and "baseline" in markdown.lower()
    assert_no_launch_processes()

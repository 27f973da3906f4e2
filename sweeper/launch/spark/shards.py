"""Data-parallel training on Spark: shards in a cached RDD, trainers cached in the executors' Python workers.

Each round's closure is cloudpickled into the executors, where a Python worker finds its shard's trainer
in this module's ``_TRAINERS`` (through :func:`_trainer`), so the trainer and its optimizer state live
across rounds as they do on Dask.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from sweeper.workload.averaging import Outcome, ShardTrainer, Weights, shard_rows, train
from sweeper.workload.data import Data

_TRAINERS: dict[tuple[str, int], ShardTrainer] = {}


def _spark_round(
    token: str, params: dict[str, Any], classes: np.ndarray, seed: int, local_epochs: int, broadcast: Any
) -> Callable[[int, Iterator[tuple[np.ndarray, np.ndarray]]], Iterator[tuple[int, Weights, int]]]:
    def run(index: int, shard: Iterator[tuple[np.ndarray, np.ndarray]]) -> Iterator[tuple[int, Weights, int]]:
        # Read the cached partition to the end even when the trainer is known: a Python worker whose
        # input was not consumed is not reused, and the next round would lose the trainer.
        X, y = next(shard)
        for _ in shard:
            pass
        trainer = _trainer(token, index, lambda: ShardTrainer(X, y, params, classes, seed))
        weights, n = trainer.train_round(broadcast.value if broadcast is not None else None, local_epochs)
        yield index, weights, n

    return run


def _trainer(token: str, index: int, make: Callable[[], ShardTrainer]) -> ShardTrainer:
    """The shard's trainer in this Python worker, made in its first round.

    Module-level on purpose: the round's closure is pickled by value, with a COPY of the globals it
    names, so it must reach ``_TRAINERS`` through a function pickled by reference, which runs in the
    worker's own module. Read from the closure, every round would build a new trainer and restart
    its optimizer.
    """
    trainer = _TRAINERS.get((token, index))
    if trainer is None:
        trainer = _TRAINERS[(token, index)] = make()
    return trainer


def _forget(token: str) -> Callable[[Iterator[Any]], None]:
    def forget(_: Iterator[Any]) -> None:
        _drop_trainers(token)

    return forget


def _drop_trainers(token: str) -> None:
    """Forget one training's trainers in this Python worker (module-level: see :func:`_trainer`)."""
    for key in [key for key in _TRAINERS if key[0] == token]:
        del _TRAINERS[key]


@dataclass
class SparkShards:
    """The shards of one launch on Spark: a cached RDD of P partitions, one shard each."""

    spark: Any
    data: Data
    rdd: Any

    @classmethod
    def ship(cls, spark: Any, data: Data, shards: int, seed: int) -> SparkShards:
        """Parallelize the shards into a cached RDD and materialize it once."""
        parts = [(data.X_train[rows], data.y_train[rows]) for rows in shard_rows(data.y_train, shards, seed)]
        rdd = spark.sparkContext.parallelize(parts, len(parts)).cache()
        rdd.count()
        return cls(spark, data, rdd)

    def train(self, params: dict[str, Any], epochs: int, local_epochs: int, seed: int) -> Outcome:
        """One model: fresh trainers in the executors' Python workers, then synchronous rounds."""
        context = self.spark.sparkContext
        classes = np.unique(self.data.y_train)
        token = uuid.uuid4().hex

        def run_round(weights: Weights | None) -> list[tuple[Weights, int]]:
            broadcast = context.broadcast(weights) if weights is not None else None
            try:
                rows = self.rdd.mapPartitionsWithIndex(
                    _spark_round(token, params, classes, seed, local_epochs, broadcast)
                ).collect()
            finally:
                if broadcast is not None:
                    broadcast.unpersist()
            return [(w, n) for _, w, n in sorted(rows, key=lambda row: row[0])]

        outcome = train(run_round, epochs, local_epochs, shards=self.rdd.getNumPartitions())
        self.rdd.foreachPartition(_forget(token))
        return outcome

    def close(self) -> None:
        self.rdd.unpersist()

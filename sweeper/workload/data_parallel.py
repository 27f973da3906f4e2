"""Mode ``data-parallel``: ONE MLPClassifier trained across the launch by parameter averaging.

The training set is split into P stratified shards, each kept on one worker for the whole
launch together with its own model (and optimizer state). Every round each worker runs
``partial_fit`` over its shard ``local_epochs`` times from the current weights, the driver
averages the weights (weighted by shard size) and sends them back. Only the weights travel
each round; the shards are shipped once.

With P = 1 this is exactly a plain ``partial_fit`` loop over the whole training set.
"""

from __future__ import annotations

import math
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from sweeper.workload.data import Data
from sweeper.workload.environment import observed
from sweeper.workload.fit import FitResult, FitTask


@dataclass(frozen=True)
class Weights:
    """The parameters of an MLP: one matrix and one vector per layer."""

    coefs: tuple[np.ndarray, ...]
    intercepts: tuple[np.ndarray, ...]

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (*self.coefs, *self.intercepts))

    @classmethod
    def of(cls, model: Any) -> Weights:
        return cls(tuple(c.copy() for c in model.coefs_), tuple(b.copy() for b in model.intercepts_))

    def into(self, model: Any) -> None:
        model.coefs_ = [c.copy() for c in self.coefs]
        model.intercepts_ = [b.copy() for b in self.intercepts]


@dataclass(frozen=True)
class Outcome:
    """What a data-parallel training reports: the final weights and what each round cost."""

    weights: Weights
    round_s: tuple[float, ...]
    comm_bytes_per_round: int
    shards: int


def make_model(params: dict[str, Any], seed: int) -> Any:
    """The MLPClassifier every shard trains (``partial_fit`` needs no ``max_iter``)."""
    from sklearn.neural_network import MLPClassifier

    settings = dict(params)
    if "hidden_layer_sizes" in settings:
        settings["hidden_layer_sizes"] = tuple(settings["hidden_layer_sizes"])
    return MLPClassifier(random_state=seed, **settings)


class ShardTrainer:
    """Lives on one worker for the whole launch: a shard of the training set and its model."""

    def __init__(self, X: np.ndarray, y: np.ndarray, params: dict[str, Any], classes: np.ndarray, seed: int) -> None:
        self.X = X
        self.y = y
        self.classes = classes
        self.model = make_model(params, seed)

    def train_round(self, weights: Weights | None, local_epochs: int) -> tuple[Weights, int]:
        """``local_epochs`` passes over the shard from ``weights``; returns the new weights and the shard size."""
        if weights is not None:
            if not hasattr(self.model, "n_layers_"):  # a trainer made after round 1 (its worker was replaced)
                self.model.partial_fit(self.X[:1], self.y[:1], classes=self.classes)
                del self.model._optimizer  # start its optimizer afresh from the received weights
            weights.into(self.model)
        for _ in range(local_epochs):
            self.model.partial_fit(self.X, self.y, classes=self.classes)
        return Weights.of(self.model), len(self.y)


def shard_rows(y: np.ndarray, shards: int, seed: int) -> list[np.ndarray]:
    """Stratified, disjoint row indices of ``shards`` shards covering every row.

    >>> import numpy as np
    >>> parts = shard_rows(np.arange(20) % 2, 3, seed=0)
    >>> sorted(len(p) for p in parts), sorted(np.concatenate(parts).tolist()) == list(range(20))
    ([6, 7, 7], True)
    """
    if shards == 1:
        return [np.arange(len(y))]
    rng = np.random.default_rng(seed)
    parts: list[list[int]] = [[] for _ in range(shards)]
    offset = 0
    for label in np.unique(y):
        rows = rng.permutation(np.flatnonzero(y == label))
        for position, row in enumerate(rows):
            parts[(offset + position) % shards].append(int(row))
        offset += len(rows)
    return [np.sort(np.array(p, dtype=np.intp)) for p in parts]


def average(results: Iterable[tuple[Weights, int]]) -> Weights:
    """Weights averaged by shard size (one shard: returned unchanged, bit for bit)."""
    results = list(results)
    if len(results) == 1:
        return results[0][0]
    total = sum(n for _, n in results)
    layers = len(results[0][0].coefs)
    coefs = tuple(sum(w.coefs[i] * (n / total) for w, n in results) for i in range(layers))
    intercepts = tuple(sum(w.intercepts[i] * (n / total) for w, n in results) for i in range(layers))
    return Weights(coefs, intercepts)  # type: ignore[arg-type]


RoundFn = Callable[[Weights | None], list[tuple[Weights, int]]]


def train(run_round: RoundFn, epochs: int, local_epochs: int, shards: int) -> Outcome:
    """Synchronous rounds until every shard has seen ``epochs`` passes over its data."""
    weights: Weights | None = None
    times = []
    comm = 0
    for _ in range(math.ceil(epochs / local_epochs)):
        started = time.perf_counter()
        sent = weights
        results = run_round(sent)
        weights = average(results)
        times.append(time.perf_counter() - started)
        comm = (sent.nbytes * shards if sent else 0) + sum(w.nbytes for w, _ in results)
    assert weights is not None
    return Outcome(weights=weights, round_s=tuple(times), comm_bytes_per_round=comm, shards=shards)


def accuracy(weights: Weights, params: dict[str, Any], data: Data, seed: int) -> float:
    """Test accuracy of the averaged weights."""
    classes = np.unique(data.y_train)
    model = make_model(params, seed)
    model.partial_fit(data.X_train[:1], data.y_train[:1], classes=classes)  # builds the layers; weights replaced
    weights.into(model)
    return float(model.score(data.X_test, data.y_test))


def train_in_process(data: Data, params: dict[str, Any], epochs: int, local_epochs: int, seed: int) -> Outcome:
    """P = 1, in this process: the single-thread baseline of a data-parallel measurement."""
    trainer = ShardTrainer(data.X_train, data.y_train, params, np.unique(data.y_train), seed)
    return train(lambda w: [trainer.train_round(w, local_epochs)], epochs, local_epochs, shards=1)


def fit_result(task: FitTask, data: Data, train_once: Callable[[dict[str, Any]], Outcome]) -> FitResult:
    """Time one data-parallel training and score its averaged weights."""
    from threadpoolctl import threadpool_limits

    params = dict(task.params)
    started = time.perf_counter()
    with threadpool_limits(limits=task.threads_per_fit):
        outcome = train_once(params)
    fit_s = time.perf_counter() - started
    rounds = len(outcome.round_s)
    return FitResult(
        fit_s=fit_s,
        accuracy=accuracy(outcome.weights, params, data, task.seed),
        epochs_run=rounds * task.local_epochs,
        converged=False,
        pid=os.getpid(),
        environment=observed(),
        rounds=rounds,
        round_s_mean=sum(outcome.round_s) / rounds,
        comm_bytes_per_round=outcome.comm_bytes_per_round,
        shards=outcome.shards,
    )


def train_in_process_result(task: FitTask, data: Data) -> FitResult:
    """The baseline's data-parallel measurement: P = 1, in the calling process."""
    return fit_result(
        task, data, lambda params: train_in_process(data, params, task.epochs, task.local_epochs, task.seed)
    )


# --- Dask: shards and trainers are futures pinned to workers -----------------------------------


def _new_trainer(X: np.ndarray, y: np.ndarray, params: dict[str, Any], classes: np.ndarray, seed: int) -> ShardTrainer:
    return ShardTrainer(X, y, params, classes, seed)


def _dask_round(trainer: ShardTrainer, weights: Weights | None, local_epochs: int) -> tuple[Weights, int]:
    return trainer.train_round(weights, local_epochs)


@dataclass
class DaskShards:
    """The shards of one launch on Dask: each shard's arrays are futures kept on one worker."""

    client: Any
    data: Data
    parts: list[tuple[str, Any, Any]]
    shipped_bytes: int

    @classmethod
    def ship(cls, client: Any, data: Data, shards: int, seed: int) -> DaskShards:
        """Send each shard to one worker, once per launch."""
        workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
        parts = []
        shipped = 0
        for index, rows in enumerate(shard_rows(data.y_train, shards, seed)):
            worker = workers[index % len(workers)]
            X, y = data.X_train[rows], data.y_train[rows]
            shipped += X.nbytes + y.nbytes
            X_f, y_f = client.scatter([X, y], workers=[worker], hash=False)
            parts.append((worker, X_f, y_f))
        return cls(client, data, parts, shipped)

    def train(self, params: dict[str, Any], epochs: int, local_epochs: int, seed: int) -> Outcome:
        """One model: a fresh trainer next to each shard, then synchronous rounds."""
        classes = np.unique(self.data.y_train)
        pinned = {"allow_other_workers": False, "pure": False}
        trainers = [
            (worker, self.client.submit(_new_trainer, X_f, y_f, params, classes, seed, workers=[worker], **pinned))
            for worker, X_f, y_f in self.parts
        ]

        def run_round(weights: Weights | None) -> list[tuple[Weights, int]]:
            futures = [
                self.client.submit(_dask_round, trainer, weights, local_epochs, workers=[worker], **pinned)
                for worker, trainer in trainers
            ]
            results: list[tuple[Weights, int]] = self.client.gather(futures)
            return results

        try:
            return train(run_round, epochs, local_epochs, shards=len(self.parts))
        finally:
            self.client.cancel([trainer for _, trainer in trainers])


# --- Spark: shards in a cached RDD, trainers cached in the executors' Python workers -----------

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
        trainer = _TRAINERS.get((token, index))
        if trainer is None:  # first round in this Python worker: keep the shard's model here
            trainer = _TRAINERS[(token, index)] = ShardTrainer(X, y, params, classes, seed)
        weights, n = trainer.train_round(broadcast.value if broadcast is not None else None, local_epochs)
        yield index, weights, n

    return run


def _forget(token: str) -> Callable[[Iterator[Any]], None]:
    def forget(_: Iterator[Any]) -> None:
        for key in [key for key in _TRAINERS if key[0] == token]:
            del _TRAINERS[key]

    return forget


@dataclass
class SparkShards:
    """The shards of one launch on Spark: a cached RDD of P partitions, one shard each."""

    spark: Any
    data: Data
    rdd: Any
    shipped_bytes: int

    @classmethod
    def ship(cls, spark: Any, data: Data, shards: int, seed: int) -> SparkShards:
        """Parallelize the shards into a cached RDD and materialize it once."""
        parts = [(data.X_train[rows], data.y_train[rows]) for rows in shard_rows(data.y_train, shards, seed)]
        rdd = spark.sparkContext.parallelize(parts, len(parts)).cache()
        rdd.count()
        shipped = sum(X.nbytes + y.nbytes for X, y in parts)
        return cls(spark, data, rdd, shipped)

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

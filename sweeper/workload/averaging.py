"""Data-parallel training by parameter averaging: ONE MLPClassifier trained across P shards.

The training set is split into P stratified shards, each kept on one worker for the whole
launch together with its own model (and optimizer state). Every round each worker runs
``partial_fit`` over its shard ``local_epochs`` times from the current weights, the driver
averages the weights (weighted by shard size) and sends them back. Only the weights travel
each round; the shards are shipped once. This module is the algorithm only: how shards reach
workers is the engine's (``launch/dask/shards.py``, ``launch/spark/shards.py``).

With P = 1 this is exactly a plain ``partial_fit`` loop over the whole training set.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from sweeper.workload.data import Data


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


def _make_model(params: dict[str, Any], seed: int) -> Any:
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
        self.model = _make_model(params, seed)

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
    model = _make_model(params, seed)
    model.partial_fit(data.X_train[:1], data.y_train[:1], classes=classes)  # builds the layers; weights replaced
    weights.into(model)
    return float(model.score(data.X_test, data.y_test))


def train_in_process(data: Data, params: dict[str, Any], epochs: int, local_epochs: int, seed: int) -> Outcome:
    """P = 1, in this process: the single-thread baseline of a data-parallel measurement."""
    trainer = ShardTrainer(data.X_train, data.y_train, params, np.unique(data.y_train), seed)
    return train(lambda w: [trainer.train_round(w, local_epochs)], epochs, local_epochs, shards=1)

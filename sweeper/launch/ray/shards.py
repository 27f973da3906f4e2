"""Data-parallel training on Ray: each shard in the object store, its trainer an actor pinned to one worker node."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from sweeper.workload.averaging import Outcome, ShardTrainer, Weights, shard_rows, train
from sweeper.workload.data import Data


class _Trainer:
    """A :class:`ShardTrainer` as a Ray actor (the arrays arrive resolved from the object store)."""

    def __init__(self, X: np.ndarray, y: np.ndarray, params: dict[str, Any], classes: np.ndarray, seed: int) -> None:
        self.trainer = ShardTrainer(X, y, params, classes, seed)

    def train_round(self, weights: Weights | None, local_epochs: int) -> tuple[Weights, int]:
        return self.trainer.train_round(weights, local_epochs)


def _worker_node_ids() -> list[str]:
    """The alive worker nodes (those with CPUs), in a stable order."""
    return sorted(node["NodeID"] for node in ray.nodes() if node.get("Alive") and node["Resources"].get("CPU", 0) > 0)


@dataclass
class RayShards:
    """The shards of one launch on Ray: each shard's arrays put once, read by a trainer on its node."""

    data: Data
    parts: list[tuple[str, Any, Any]]  # (node id, X's object ref, y's object ref)

    @classmethod
    def ship(cls, data: Data, shards: int, seed: int) -> RayShards:
        """Put each shard in the object store, once per launch, with the node its trainer runs on."""
        nodes = _worker_node_ids()
        parts = []
        for index, rows in enumerate(shard_rows(data.y_train, shards, seed)):
            parts.append((nodes[index % len(nodes)], ray.put(data.X_train[rows]), ray.put(data.y_train[rows])))
        return cls(data, parts)

    def train(self, params: dict[str, Any], epochs: int, local_epochs: int, seed: int) -> Outcome:
        """One model: a fresh trainer actor on each shard's node, then synchronous rounds."""
        classes = np.unique(self.data.y_train)
        trainer = ray.remote(num_cpus=0, max_restarts=0)(_Trainer)  # placed by node, as Dask pins by worker
        actors: list[Any] = [
            trainer.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote(
                X, y, params, classes, seed
            )
            for node, X, y in self.parts
        ]

        def run_round(weights: Weights | None) -> list[tuple[Weights, int]]:
            results: list[tuple[Weights, int]] = ray.get([a.train_round.remote(weights, local_epochs) for a in actors])
            return results

        try:
            return train(run_round, epochs, local_epochs, shards=len(self.parts))
        finally:
            for actor in actors:
                ray.kill(actor)

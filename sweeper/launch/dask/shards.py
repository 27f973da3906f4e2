"""Data-parallel training on Dask: each shard and its trainer are futures pinned to one worker."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sweeper.workload.averaging import Outcome, ShardTrainer, Weights, shard_rows, train
from sweeper.workload.data import Data


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

    @classmethod
    def ship(cls, client: Any, data: Data, shards: int, seed: int) -> DaskShards:
        """Send each shard to one worker, once per launch."""
        workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
        parts = []
        for index, rows in enumerate(shard_rows(data.y_train, shards, seed)):
            worker = workers[index % len(workers)]
            X, y = data.X_train[rows], data.y_train[rows]
            X_f, y_f = client.scatter([X, y], workers=[worker], hash=False)
            parts.append((worker, X_f, y_f))
        return cls(client, data, parts)

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

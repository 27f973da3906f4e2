"""The small batch of fits the launch tests run."""

from __future__ import annotations

from sweeper.workload.data import Data
from sweeper.workload.tasks import FitTask, make_batch


def replicas(
    data: Data, fits: int = 2, *, epochs: int = 5, hidden: tuple[int, ...] = (16,), exact_epochs: bool = False
) -> list[FitTask]:
    """``fits`` replicas (seeds 0..fits-1, trial 0) of an MLP with ``hidden`` layers, ``epochs`` each (``exact_epochs``:
    no early stop), 1 thread."""
    return make_batch(
        "replicas",
        {"hidden_layer_sizes": hidden},
        epochs,
        0,
        fits,
        n_train=data.n_train,
        labels=data.y_train,
        folds=2,
        param_grid=(),
        seed=0,
        exact_epochs=exact_epochs,
        threads_per_fit=1,
    )

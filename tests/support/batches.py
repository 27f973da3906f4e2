"""The small batch of fits the launch tests run."""

from __future__ import annotations

from sweeper.workload.data import Data
from sweeper.workload.tasks import FitTask, Recipe, make_batch


def replicas(
    data: Data, fits: int = 2, *, epochs: int = 5, hidden: tuple[int, ...] = (16,), exact_epochs: bool = False
) -> list[FitTask]:
    """``fits`` replicas (seeds 0..fits-1, trial 0) of an MLP with ``hidden`` layers, ``epochs`` each (``exact_epochs``:
    no early stop), 1 thread."""
    recipe = Recipe(exact_epochs=exact_epochs)
    return make_batch(recipe, "replicas", {"hidden_layer_sizes": hidden}, epochs, 0, fits, labels=data.y_train)
